"""Preflight facts the upstream corpus brought out, one release against another, and that the
corpus itself is complete (issue 29 item 4).

The corpus check itself (every GRPO and DPO file of every release compiled by us and by a
reference of NeMo-RL's loader, then dry-run) is `upstream_corpus.py`, run by one module per
release, `test_upstream_corpus_<release>.py`, so that xdist spreads the releases over workers.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from preflight_fixtures import error_codes, grpo_config, gym_config, run_rules
from upstream_corpus import REPO, corpus, module_names, version_name

from catalog.nemo_rl_version import parse_version
from catalog.upstream import NEMO_RL_RELEASES
from runners.nemo_rl import checkout as nemo_rl
from runners.preflight import PreflightContext, preflight
from runners.preflight.gym import gym_generation
from runners.preflight.topology import training_gpus


def test_the_corpus_covers_every_grpo_and_dpo_file_of_every_release() -> None:
    """Every release has its files and a module that checks them."""
    cases = corpus()
    if not cases:
        pytest.skip("no shared/fixtures/nemo-rl/configs next to this checkout")
    versions = {version_name(case[0]) for case in cases}
    assert versions == {*NEMO_RL_RELEASES, "pin"}
    counts = {v: sum(1 for c in cases if version_name(c[0]) == v) for v in sorted(versions)}
    print("upstream GRPO/DPO configs per release:", counts)
    assert all(n >= 20 for n in counts.values()), counts
    modules = [name for v in sorted(versions) for name in module_names(v)]
    missing = [name for name in modules if not (REPO / "tests" / name).is_file()]
    assert missing == [], "each release needs its module(s): a copy of another, names changed"


PIN, V070, V060 = (parse_version(v) for v in ("pin", "0.7.0", "0.6.0"))


def _ctx(config: dict, version=PIN) -> PreflightContext:
    return PreflightContext("rl/test/grpo", None, copy.deepcopy(config), nemo_rl_version=version)


def test_nodes_of_non_colocated_teachers_do_not_train() -> None:
    """pin grpo.py:782-801 (v0.7.0 :543-557): 10 nodes = 8 train + 1 generate + 1 teacher;
    two agents sharing one teacher checkpoint reserve one node (deduplicated)."""
    config = {
        "grpo": {},
        "cluster": {"num_nodes": 10, "gpus_per_node": 8},
        "policy": {"generation": {"colocated": {"enabled": False, "resources": {"num_nodes": 1}}}},
        "on_policy_distillation": {
            "enabled": True,
            "teacher_model_by_agent_name": {"a": "teacher", "b": "teacher"},
            "non_colocated_teachers": {"enabled": True, "default_teacher_cfg": {}},
        },
    }
    gpus, how = training_gpus(_ctx(config))
    assert gpus == 64 and how.startswith("training (8 of 10 nodes; 1 generate")
    config["on_policy_distillation"]["deduplicate_shared_teacher_checkpoints"] = False
    assert training_gpus(_ctx(config))[0] == 56
    config["on_policy_distillation"]["non_colocated_teachers"]["enabled"] = False
    assert training_gpus(_ctx(config))[0] == 72


def test_gym_runs_on_trtllm_and_dynamo_generation_from_the_pin(tmp_path: Path) -> None:
    """pin nemo_gym.py:95-110 takes vllm, megatron, trtllm and dynamo; v0.7.0 vllm, megatron."""
    config = gym_config(tmp_path)
    for backend in ("trtllm", "dynamo"):
        config["policy"]["generation"]["backend"] = backend
        assert list(gym_generation(_ctx(config, PIN))) == []
        assert [f.code for f in gym_generation(_ctx(config, V070))] == ["E-GYM-GENERATION"]


def test_vllm_env_var_values_may_be_numbers_as_upstream_str_s_them(tmp_path: Path) -> None:
    """vllm_generation.py (v0.7.0 :206-207, pin :217-218) passes each value through str()."""
    config = grpo_config(tmp_path)
    config["policy"]["generation"]["vllm_cfg"]["env_vars"] = {"VLLM_FLAG": 1, "RATIO": 0.5}
    found = run_rules(config, nemo_rl_version=PIN)
    assert [f.key for f in found if f.code.startswith("E-SCHEMA")] == []


def test_a_val_metric_without_validation_is_a_warning_as_nemo_rl_trains_on(
    tmp_path: Path,
) -> None:
    """grpo.py warns at each checkpoint that no val metric was collected (v0.7.0 :2911-2918)."""
    config = grpo_config(tmp_path)
    config["grpo"].update({"val_period": 0, "val_at_start": False, "val_at_end": False})
    config["data"]["validation"] = None
    config["checkpointing"]["metric_name"] = "val:accuracy"
    found = run_rules(config, nemo_rl_version=V070)
    assert "E-VALIDATION-SETTINGS" not in error_codes(found)
    warned = [f for f in found if f.code == "W-VALIDATION-SETTINGS"]
    assert [f.key for f in warned] == ["checkpointing.metric_name"]
    assert "grpo.py:2911-2918" in warned[0].message


V050 = parse_version("0.5.0")


def test_0_4_and_0_5_are_supported_with_their_own_shipped_schema() -> None:
    for number in ("0.4.0", "0.5.0"):
        version = parse_version(number)
        assert version.supported and version.shipped == number
        target = nemo_rl.resolve_target(None, {}, number)
        assert target.describe("grpo").endswith(f"schema shipped for {number}")


def test_before_0_6_one_dataset_may_bring_its_own_validation_split(tmp_path: Path) -> None:
    """v0.5.0 examples/run_grpo.py:103-113 validates on the dataset's own split: a hub dataset
    (its name only) is not refused; a path-based one without val_data_path is."""
    config = grpo_config(tmp_path)
    config["data"] = {"dataset_name": "OpenMathInstruct-2", "shuffle": True, "num_workers": 1}
    assert "E-VALIDATION-SETTINGS" not in error_codes(run_rules(config, nemo_rl_version=V050))
    config["data"].update(dataset_name="ResponseDataset", train_data_path="/data/train.jsonl")
    assert "E-VALIDATION-SETTINGS" in error_codes(run_rules(config, nemo_rl_version=V050))


def test_asserts_that_arrive_in_0_6_are_not_applied_to_0_5(tmp_path: Path) -> None:
    """0.5.0 has no TP >= 4 logprob assert (lm_policy.py), no Megatron packing pad assert (it
    pads by TP/CP itself, megatron/common.py:259-264), reads save_optimizer and
    use_multiple_dataloader with .get or not at all."""
    config = grpo_config(tmp_path)
    meg = config["policy"]["megatron_cfg"]
    meg.update(tensor_model_parallel_size=4, context_parallel_size=2, sequence_parallel=True)
    config["policy"].update(train_micro_batch_size=1, logprob_batch_size=2)
    config["policy"]["make_sequence_length_divisible_by"] = 4
    config["policy"]["sequence_packing"] = {"enabled": True}
    config["cluster"].update(num_nodes=1, gpus_per_node=8)
    del config["checkpointing"]["save_optimizer"]
    config["data"].pop("use_multiple_dataloader", None)
    watched = {
        ("E-TP-LOGPROB-BATCH", "policy.logprob_batch_size"),
        ("E-SEQ-DIVISIBLE", "policy.make_sequence_length_divisible_by"),
        ("E-SETUP-KEY", "checkpointing.save_optimizer"),
    }

    def found(version) -> set:
        return {(f.code, f.key) for f in run_rules(config, nemo_rl_version=version)} & watched

    assert found(V060) == watched and found(V050) == set()


def test_our_step_config_on_0_5_is_told_its_data_section_has_the_newer_shape() -> None:
    from preflight_fixtures import context_for

    rlvr = REPO / "steps" / "rl" / "nemo_rl" / "rlvr"
    ctx = context_for(rlvr / "config" / "default.yaml", rlvr, "0.5.0")
    found = [f for f in preflight(ctx) if f.code.startswith(("E-SCHEMA", "E-NEMO-RL-LAYOUT"))]
    assert [(f.code, f.key) for f in found] == [("E-NEMO-RL-LAYOUT", "data.train")]
    assert "written for NeMo-RL 0.6.0 or newer" in found[0].message
    assert "First failure there: data.dataset_name: required key is missing" in found[0].message
