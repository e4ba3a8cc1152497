"""A NeMo-Gym config is judged by what the Gym script of the NeMo-RL that runs really reads.

v0.5.0's examples/nemo_gym/run_grpo_nemo_gym.py opens data.train_jsonl_fpath and
data.validation_jsonl_fpath itself (:205-211) and never builds the dataset examples/run_grpo.py
reads (`dataset_name`, `max_input_seq_length`); from 0.6.0 it hands `data` to the shared setup;
v0.4.0 has no Gym script. The configs below have the shapes of upstream's 0.5.0
examples/nemo_gym/ configs and of Nemotron's Super RL stages (0.6.0+ data layout, shipped for a
"v0.5.0" container); they are written here, not copied (the fixtures hold only examples/configs/).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from preflight_fixtures import gym_config, run_rules

from catalog.nemo_rl_version import parse_version

OLD_GYM_DATA = {  # upstream's 0.5.0 examples/nemo_gym/*.yaml write their data section so
    "train_jsonl_fpath": "3rdparty/Gym-workspace/Gym/data/train.jsonl",
    "validation_jsonl_fpath": "3rdparty/Gym-workspace/Gym/data/validation.jsonl",
    "agent_name": "workplace_assistant_simple_agent",
    "shuffle": True,
    "num_workers": 0,
}


def _data_findings(cfg: dict, version: str) -> list[tuple[str, str | None, str]]:
    """What is said about the data section: schema keys under data., validation data."""
    found = run_rules(cfg, nemo_rl_version=parse_version(version, named=True))
    return [
        (f.code, f.key, f.message)
        for f in found
        if (f.key or "").startswith("data")
        or f.code in {"E-VALIDATION-SETTINGS", "E-NEMO-RL-LAYOUT", "E-GYM-SCRIPT"}
    ]


def _old_gym_config(tmp_path: Path) -> dict:
    cfg = gym_config(tmp_path)
    cfg["data"] = dict(OLD_GYM_DATA)
    cfg["grpo"]["val_period"] = 10  # validation on: the Gym script always loads its file
    return cfg


def test_a_gym_config_of_the_0_5_0_examples_shape_gets_no_data_finding_at_0_5_0(
    tmp_path: Path,
) -> None:
    assert _data_findings(_old_gym_config(tmp_path), "0.5.0") == []


def test_the_gym_data_keys_0_5_0_reads_are_required_with_the_line_that_reads_them(
    tmp_path: Path,
) -> None:
    cfg = _old_gym_config(tmp_path)
    del cfg["data"]["train_jsonl_fpath"]
    found = _data_findings(cfg, "0.5.0")
    assert [(code, key) for code, key, _ in found] == [("E-SCHEMA-KEY", "data.train_jsonl_fpath")]
    assert "examples/nemo_gym/run_grpo_nemo_gym.py:206: a KeyError" in found[0][2]


def test_a_0_6_0_layout_gym_config_at_0_5_0_is_one_error_naming_train_jsonl_fpath(
    tmp_path: Path,
) -> None:
    """Nemotron's Super stages: data.train / validation / default with NemoGymDataset and
    max_input_seq_length null, run by NeMo-RL 0.5.0: its Gym script dies on KeyError
    'train_jsonl_fpath' (:206); not on dataset_name, max_input_seq_length or validation."""
    cfg = gym_config(tmp_path)
    cfg["data"]["max_input_seq_length"] = None
    found = _data_findings(cfg, "0.5.0")
    assert [(code, key) for code, key, _ in found] == [("E-NEMO-RL-LAYOUT", "data.train")]
    message = found[0][2]
    assert "data.train_jsonl_fpath: required key is missing" in message
    assert "run_grpo_nemo_gym.py:206" in message
    assert "dataset_name" not in message and "max_input_seq_length" not in message


@pytest.mark.parametrize("version", ["0.6.0", "0.7.0", "pin"])
def test_from_0_6_0_the_gym_script_reads_the_shared_data_layout(
    tmp_path: Path, version: str
) -> None:
    assert _data_findings(gym_config(tmp_path / "new"), version) == []
    old = _data_findings(_old_gym_config(tmp_path / "old"), version)
    assert ("E-SCHEMA-KEY", "data.train") in [(c, k) for c, k, _ in old]


def test_a_plain_config_at_0_5_0_is_still_judged_by_run_grpo_py(tmp_path: Path) -> None:
    cfg = _old_gym_config(tmp_path)
    cfg["env"] = {"math": {"num_workers": 1}}
    found = _data_findings(cfg, "0.5.0")
    assert ("E-SCHEMA-KEY", "data.dataset_name") in [(c, k) for c, k, _ in found]


def test_a_gym_config_at_0_4_0_is_an_error_there_is_no_gym_script(tmp_path: Path) -> None:
    found = [
        f for f in _data_findings(_old_gym_config(tmp_path), "0.4.0") if f[0] == "E-GYM-SCRIPT"
    ]
    assert [(code, key) for code, key, _ in found] == [("E-GYM-SCRIPT", "env.should_use_nemo_gym")]
    assert "NeMo-RL 0.4.0 has no NeMo-Gym script" in found[0][2]


def test_the_workplace_assistant_shape_without_moe_per_layer_logging_runs_at_0_5_0(
    tmp_path: Path,
) -> None:
    """A dense model on Megatron: v0.5.0 reads moe_per_layer_logging only with experts
    (megatron_policy_worker.py:1270) and validates nothing, so its absence is a warning."""
    cfg = _old_gym_config(tmp_path)
    cfg["policy"]["megatron_cfg"].pop("moe_per_layer_logging")
    found = run_rules(cfg, nemo_rl_version=parse_version("0.5.0", named=True))
    key = "policy.megatron_cfg.moe_per_layer_logging"
    assert [(f.code, f.severity) for f in found if f.key == key] == [
        ("W-SCHEMA-BRANCH-KEY", "warning")
    ]
    assert "megatron_policy_worker.py:1270" in next(f.message for f in found if f.key == key)


def test_a_gym_dry_run_against_a_0_4_0_checkout_is_an_error_not_a_warning(tmp_path: Path) -> None:
    """The checkout is found (its own run_grpo_math.py), but it has no Gym script: that is
    decisive, so it is E-GYM-SCRIPT, not "no NeMo-RL checkout found" (W-NEMO-RL-NOT-FOUND)."""
    import json

    from nemo_rl_trees import nemo_rl_tree
    from pipeline_toys import steps_main

    old = nemo_rl_tree(tmp_path / "rl", "0.4.0", script="examples/run_grpo_math.py")
    proc = steps_main(
        "run", "rl/nemo_rl/rlvr", "-c", "nemo_gym_tiny", "--nemo-rl", str(old), "--dry-run",
        "--json", cwd=tmp_path,
    )  # fmt: skip
    codes = [f["code"] for f in json.loads(proc.stdout)["findings"]]
    assert proc.returncode == 1 and "E-GYM-SCRIPT" in codes
    assert "W-NEMO-RL-NOT-FOUND" not in codes


def test_the_shipped_schemas_say_what_each_releases_gym_script_reads() -> None:
    from runners.nemo_rl.schema.store import shipped_schema

    gym = {v: shipped_schema(v, "grpo")["gym"] for v in ("0.4.0", "0.5.0", "0.6.0", "0.7.0", "pin")}
    assert gym["0.4.0"] == {"script": None}
    assert gym["0.5.0"]["data"] == {
        "train_jsonl_fpath": "examples/nemo_gym/run_grpo_nemo_gym.py:206",
        "validation_jsonl_fpath": "examples/nemo_gym/run_grpo_nemo_gym.py:210",
    }
    assert gym["0.5.0"]["data_required"] == ["shuffle"]  # grpo.py's setup reads it
    for later in ("0.6.0", "0.7.0", "pin"):  # the whole data section goes to the shared setup
        assert gym[later] == {"script": "examples/nemo_gym/run_grpo_nemo_gym.py"}


GYM_SCRIPT_050 = """
def main():
    config: MasterConfig = load()
    if config["grpo"]["max_val_samples"] is not None:
        raise ValueError()
    train = setup_single(jsonl_fpath=config["data"]["train_jsonl_fpath"])
    if config["data"].get("extra"):
        extra = config["data"]["extra_path"]
    setup(config, train)
"""
GYM_SCRIPT_070 = """
def main():
    config = MasterConfig(**load())
    train, val = setup_response_data(tokenizer, config.data, env_configs=None)
    if config.data["use_multiple_dataloader"]:
        pass
"""


def test_a_gym_script_reading_its_own_keys_is_told_from_one_handing_data_on() -> None:
    import ast

    from runners.nemo_rl.schema.gym_script import script_reads

    reads, whole = script_reads(ast.parse(GYM_SCRIPT_050))
    assert (reads, whole) == ({"train_jsonl_fpath": 6}, False)  # extra_path: only on a branch
    reads, whole = script_reads(ast.parse(GYM_SCRIPT_070))
    assert whole is True
