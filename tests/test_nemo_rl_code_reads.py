"""What NeMo-RL's code reads decides beyond its types: keys it indexes unguarded are required
(with the line that reads them), and a null its code handles is no error where nothing
validates the config. Derived from NeMo-RL-like source trees, and shipped per release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nemo_rl_trees import reads_tree
from preflight_fixtures import context_for, run_rules

from catalog.upstream import NEMO_RL_SCHEMA_DIR, NEMO_RL_STEP_RELEASES
from runners.nemo_rl import checkout as nemo_rl
from runners.nemo_rl.schema import store
from runners.preflight import preflight

ROOT = Path(__file__).resolve().parents[1]
DPO = ROOT / "steps" / "rl" / "nemo_rl" / "dpo"
SUPPORTED = [*NEMO_RL_STEP_RELEASES, "pin"]  # the versions our steps' configs run on
WORKER = "nemo_rl/models/policy/workers/dtensor_policy_worker.py"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPS_CACHE_DIR", str(tmp_path / "cache"))
    store.cached_schema_for.cache_clear()


def _config(dtensor: dict, **checkpointing: object) -> dict:
    """A DPO config of the tree; the keys setup_indexed_keys' own list requires are set."""
    policy = {"model_name": "m", "dtensor_cfg": dtensor, "sequence_packing": {"enabled": False}}
    return {
        "policy": policy,
        "dpo": {"max_num_steps": 3},
        "data": {"num_workers": 1},
        "checkpointing": {
            "enabled": True,
            "keep_top_k": 3,
            "save_optimizer": True,
            **checkpointing,
        },
    }


def _found(tree: Path, config: dict) -> list[tuple[str, str | None, str]]:
    version = nemo_rl.detect_version(tree)
    found = run_rules(config, "dpo", nemo_rl_dir=tree, nemo_rl_version=version)
    return [(f.code, f.key, f.message) for f in found if f.code in {"E-SETUP-KEY", "E-SCHEMA-TYPE"}]


@pytest.mark.parametrize("version", ["0.6.0", "0.7.0"])
def test_a_key_read_unguarded_is_required_with_the_line_that_reads_it(
    tmp_path: Path, version: str
) -> None:
    tree = reads_tree(tmp_path / "rl", version)
    found = _found(tree, _config({"enabled": True, "tensor_parallel_size": 2}))
    assert [(code, key) for code, key, _ in found] == [
        ("E-SETUP-KEY", "policy.dtensor_cfg.custom_parallel_plan")
    ]  # not max_grad_norm (read under an if) nor clear_cache_every_n_steps (.get)
    assert f"NeMo-RL {version} reads it directly at {WORKER}:10" in found[0][2]
    plan = {"enabled": True, "tensor_parallel_size": 2, "custom_parallel_plan": None}
    assert _found(tree, _config(plan)) == []
    assert _found(tree, _config({"enabled": False})) == []  # the worker never runs


def test_a_read_upstreams_own_examples_leave_out_is_not_required(tmp_path: Path) -> None:
    tree = reads_tree(tmp_path / "rl", "0.7.0", example_sets_plan=False)
    assert _found(tree, _config({"enabled": True, "tensor_parallel_size": 1})) == []
    doc = store.schema_for("dpo", tree, nemo_rl.detect_version(tree)).doc
    assert "policy.dtensor_cfg" not in doc["reads"]
    assert doc["reads"]["checkpointing"] == {
        "keep_top_k": [{"at": "nemo_rl/utils/checkpoint.py:12", "when": {}}]
    }


def test_a_null_the_code_handles_passes_unless_pydantic_validates_the_config(
    tmp_path: Path,
) -> None:
    plan = {"enabled": True, "tensor_parallel_size": 1, "custom_parallel_plan": None}
    old = reads_tree(tmp_path / "old", "0.6.0")
    assert _found(old, _config(plan, keep_top_k=None)) == []
    new = reads_tree(tmp_path / "new", "0.7.0")
    found = _found(new, _config(plan, keep_top_k=None))
    assert [(code, key) for code, key, _ in found] == [
        ("E-SCHEMA-TYPE", "checkpointing.keep_top_k")
    ]
    assert "validates its config with pydantic, which refuses None here before" in found[0][2]
    assert "nemo_rl/utils/checkpoint.py:16 (which handles None)" in found[0][2]
    assert [key for _, key, _ in _found(old, _config(plan, keep_top_k="three"))] == [
        "checkpointing.keep_top_k"
    ]  # only None is what the code handles


@pytest.mark.parametrize("version", SUPPORTED)
def test_shipped_schemas_carry_the_reads_the_gpu_run_hit(version: str) -> None:
    doc = json.loads((NEMO_RL_SCHEMA_DIR / version / "dpo.json").read_text())
    (plan,) = doc["reads"]["policy.dtensor_cfg"]["custom_parallel_plan"]
    assert plan["at"].startswith(f"{WORKER}:")
    assert plan["when"] == {"policy.dtensor_cfg.enabled": True, "policy.dtensor_cfg._v2": False}
    assert {"keep_top_k", "save_optimizer"} <= set(doc["reads"]["checkpointing"])
    assert doc["none_ok"]["CheckpointingConfig"]["keep_top_k"].startswith(
        "nemo_rl/utils/checkpoint.py:"
    )
    if version == "0.7.0":  # the line the real v0.7.0 run failed at (KeyError)
        assert plan["at"] == f"{WORKER}:417"


@pytest.mark.parametrize("version", SUPPORTED)
def test_dtensor_without_custom_parallel_plan_is_caught_before_launch(version: str) -> None:
    ctx = context_for(DPO / "config" / "tiny_dtensor.yaml", DPO, version)
    del ctx.config["policy"]["dtensor_cfg"]["custom_parallel_plan"]
    found = [f for f in preflight(ctx) if f.is_error]
    assert [(f.code, f.key) for f in found] == [
        ("E-SETUP-KEY", "policy.dtensor_cfg.custom_parallel_plan")
    ]
    assert f"reads it directly at {WORKER}:" in found[0].message
    assert str(found[0].fix).endswith(": +policy.dtensor_cfg.custom_parallel_plan=null")


@pytest.mark.parametrize("version", SUPPORTED)
def test_keep_top_k_null_follows_each_versions_code(version: str) -> None:
    ctx = context_for(DPO / "config" / "tiny_dtensor.yaml", DPO, version)
    ctx.config["checkpointing"]["keep_top_k"] = None
    found = [(f.code, f.key) for f in preflight(ctx) if f.is_error]
    refused = version != "0.6.0"  # 0.7.0 and the pin validate MasterConfig with pydantic
    assert found == ([("E-SCHEMA-TYPE", "checkpointing.keep_top_k")] if refused else [])


@pytest.mark.parametrize("version", SUPPORTED)
def test_a_grpo_config_without_policy_draft_is_caught_at_the_example_scripts_line(
    tmp_path: Path, version: str
) -> None:
    """The real v0.7.0 run of our rlvr configs failed 30 s in with KeyError 'draft' at
    examples/run_grpo.py:104: the example script reads the config too."""
    rlvr = ROOT / "steps" / "rl" / "nemo_rl" / "rlvr"
    ctx = context_for(rlvr / "config" / "tiny_dtensor.yaml", rlvr, version)
    del ctx.config["policy"]["draft"]
    found = [f for f in preflight(ctx) if f.is_error]
    assert [(f.code, f.key) for f in found] == [("E-SETUP-KEY", "policy.draft")]
    line = {"0.6.0": 87, "0.7.0": 104}.get(version)
    assert f"examples/run_grpo.py:{line or ''}" in found[0].message
    assert str(found[0].fix).endswith(": +policy.draft.enabled=false")
    ctx.config["env"]["should_use_nemo_gym"] = True  # the Gym script does not read it
    assert "E-SETUP-KEY" not in {f.code for f in preflight(ctx)}


def _missing_branch_key(tree: Path) -> list[tuple[str, str | None]]:
    config = _config({"enabled": True, "tensor_parallel_size": 1, "custom_parallel_plan": None})
    found = run_rules(config, "dpo", nemo_rl_dir=tree, nemo_rl_version=nemo_rl.detect_version(tree))
    return [(f.code, f.key) for f in found if f.key == "policy.dtensor_cfg.experts_logging"]


@pytest.mark.parametrize(
    ("version", "code"), [("0.6.0", "W-SCHEMA-BRANCH-KEY"), ("0.7.0", "E-SCHEMA-KEY")]
)
def test_a_required_key_read_only_on_a_branch_an_example_skips_is_an_error_only_where_validated(
    tmp_path: Path, version: str, code: str
) -> None:
    tree = reads_tree(tmp_path / "rl", version, branch_key="omitted")
    assert _missing_branch_key(tree) == [(code, "policy.dtensor_cfg.experts_logging")]
    doc = store.schema_for("dpo", tree, nemo_rl.detect_version(tree)).doc
    assert doc["gated"] == {
        "policy.dtensor_cfg": {
            "experts_logging": "nemo_rl/models/policy/workers/dtensor_policy_worker.py:14"
        }
    }


def test_a_required_key_read_on_a_branch_every_example_sets_stays_an_error(tmp_path: Path) -> None:
    tree = reads_tree(tmp_path / "rl", "0.6.0", branch_key="set")
    assert _missing_branch_key(tree) == [("E-SCHEMA-KEY", "policy.dtensor_cfg.experts_logging")]


@pytest.mark.parametrize(
    ("version", "code"),
    [("0.6.0", "W-SCHEMA-BRANCH-KEY"), ("0.7.0", "E-SCHEMA-KEY")],
)
def test_moe_per_layer_logging_is_required_only_where_the_config_is_validated(
    tmp_path: Path, version: str, code: str
) -> None:
    """Upstream's workplace-assistant Gym example leaves it out; megatron_policy_worker.py reads
    it only for a model with experts (v0.6.0 :442), and 0.7.0's pydantic config refuses it.
    (0.5.0: test_nemo_rl_gym_versions, with that release's data layout.)"""
    from preflight_fixtures import grpo_config

    from catalog.nemo_rl_version import parse_version

    cfg = grpo_config(tmp_path)
    cfg["policy"]["megatron_cfg"].pop("moe_per_layer_logging", None)
    found = run_rules(cfg, nemo_rl_version=parse_version(version, named=True))
    key = "policy.megatron_cfg.moe_per_layer_logging"
    assert [(f.code, f.severity) for f in found if f.key == key] == [
        (code, "warning" if code.startswith("W") else "error")
    ]
