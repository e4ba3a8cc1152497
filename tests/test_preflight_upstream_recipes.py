"""Upstream's own recipes (fixtures of each release) and NeMo-RL's own semantics: what NeMo-RL
runs gets no error from preflight, and what it refuses before the GPU does (issue 29)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from preflight_fixtures import context_for, error_codes, grpo_config, run_rules

from catalog.nemo_rl_version import parse_version
from runners.launch.local import Launcher, LocalLaunch
from runners.preflight import preflight

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "nemo-rl" / "configs"
STEPS = Path(__file__).resolve().parents[1] / "steps" / "rl" / "nemo_rl"
V070 = parse_version("0.7.0")

needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason="no upstream config fixtures")


def recipe_errors(version: str, name: str) -> list[str]:
    """Error findings of an upstream recipe, compiled and preflighted for its own version."""
    path = FIXTURES / f"v{version}" / "recipes" / "llm" / name
    step = STEPS / ("dpo" if name.startswith("dpo") else "rlvr")
    return [f.render() for f in preflight(context_for(path, step, version)) if f.is_error]


@needs_fixtures
@pytest.mark.parametrize(
    "name",
    [
        # F1/F3: training runs on the nodes generation does not take
        "grpo-cispo-mm1-async-lag1-highoffpolicy-qwen3-30ba3b-3n8g-megatron-cispo.yaml",
        "grpo-qwen3-30ba3b-10n8g-megatron-cp2-r3-async.yaml",
        # F2: vLLM TP spans nodes
        "grpo-dapomath17k-dsv3-32n4g-megatron.yaml",
        "grpo-dapomath17k-dsv3-megatron.yaml",
        "grpo-glm5.1-64n8g-megatron.yaml",
        "grpo-qwen3.5-397ba17b-32n8g-megatron.v2.yaml",
        # F4: dynamic batching pads to sequence_length_round
        "grpo-llama3.2-1b-instruct-1n8g-fsdp2tp2-temp0.8-topp0.9-topk50.yaml",
        "grpo-llama3.2-1b-instruct-1n8g-fsdp2tp2-temp0.8-topp0.9-topk50-tq_mooncake.yaml",
    ],
)
def test_upstream_v070_recipe_gets_no_false_error(name: str) -> None:
    assert recipe_errors("0.7.0", name) == []


def _non_colocated(tmp_path: Path, nodes: int, gen_nodes: int) -> dict:
    cfg = grpo_config(tmp_path)
    cfg["cluster"].update(num_nodes=nodes, gpus_per_node=8)
    cfg["policy"]["generation"]["colocated"] = {
        "enabled": False,
        "resources": {"num_nodes": gen_nodes, "gpus_per_node": 8},
    }
    return cfg


def test_data_parallel_size_counts_only_training_nodes(tmp_path: Path) -> None:
    cfg = _non_colocated(tmp_path, nodes=3, gen_nodes=1)  # 16 training GPUs, TP 1: DP 16
    cfg["policy"]["train_global_batch_size"] = 24  # divides 24 (all GPUs), not 16
    cfg["grpo"].update(num_prompts_per_step=6, num_generations_per_prompt=8)
    found = [f for f in run_rules(cfg, nemo_rl_version=V070) if f.code == "E-BATCH-DIVISIBILITY"]
    assert found and "data-parallel size 16" in found[0].message
    assert "2 of 3 nodes" in (found[0].fix or "")


def test_one_node_trains_on_the_gpus_generation_leaves(tmp_path: Path) -> None:
    cfg = _non_colocated(tmp_path, nodes=1, gen_nodes=1)
    cfg["policy"]["generation"]["colocated"]["resources"]["gpus_per_node"] = 5
    cfg["policy"]["megatron_cfg"]["tensor_model_parallel_size"] = 2  # 3 training GPUs
    found = [f for f in run_rules(cfg, nemo_rl_version=V070) if f.code == "E-PARALLEL-FIT"]
    assert len(found) == 1 and "does not divide the 3 GPUs of training" in found[0].message


def test_vllm_tensor_parallel_larger_than_a_node_is_accepted(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["cluster"].update(num_nodes=4, gpus_per_node=4)
    cfg["policy"]["generation"]["vllm_cfg"]["tensor_parallel_size"] = 8
    assert "E-PARALLEL-FIT" not in error_codes(run_rules(cfg, nemo_rl_version=V070))


def test_top_k_with_dynamic_batching_checks_sequence_length_round(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["megatron_cfg"]["tensor_model_parallel_size"] = 2
    cfg["policy"]["make_sequence_length_divisible_by"] = 1
    cfg["policy"]["generation"]["top_k"] = 50
    cfg["policy"]["dynamic_batching"] = {"enabled": True, "sequence_length_round": 64}
    assert "E-SEQ-DIVISIBLE" not in codes_of(cfg)
    cfg["policy"]["dynamic_batching"]["sequence_length_round"] = 3
    found = [f for f in run_rules(cfg, nemo_rl_version=V070) if f.code == "E-SEQ-DIVISIBLE"]
    assert [f.key for f in found] == ["policy.dynamic_batching.sequence_length_round"]


def codes_of(cfg: dict) -> set[str]:
    return error_codes(run_rules(cfg, nemo_rl_version=V070))


@pytest.mark.parametrize(("version", "refused"), [("0.6.0", True), ("0.7.0", True), ("pin", False)])
def test_add_resolver_is_refused_where_nemo_rl_does_not_register_it(
    tmp_path: Path, version: str, refused: bool
) -> None:
    rlvr = STEPS / "rlvr"
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        f"defaults: {rlvr / 'config/tiny.yaml'}\n"
        "grpo:\n  max_num_steps: ${add:${grpo.num_prompts_per_step}, 1}\n"
    )
    found = [
        f for f in preflight(context_for(mine, rlvr, version)) if f.code == "E-CONFIG-INTERPOLATION"
    ]
    assert bool(found) == refused
    if refused:
        assert found[0].key == "grpo.max_num_steps" and (found[0].path, found[0].line) == (
            str(mine),
            3,
        )
        assert "${add:...}" in found[0].message and version in found[0].message


def test_missing_save_optimizer_is_one_finding_at_the_section_that_dropped_it(
    tmp_path: Path,
) -> None:
    dpo = STEPS / "dpo"
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        f"defaults: {dpo / 'config/tiny.yaml'}\n"
        "checkpointing:\n  _override_: true\n  enabled: true\n  checkpoint_dir: results/x\n"
        "  metric_name: null\n  higher_is_better: false\n  keep_top_k: 1\n  save_period: 5\n"
    )
    found = [
        f
        for f in preflight(context_for(mine, dpo, "0.7.0"))
        if f.is_error and "save_optimizer" in (f.key or "")
    ]
    assert [(f.code, f.path, f.line) for f in found] == [("E-SETUP-KEY", str(mine), 2)]
    assert "checkpoint.py:140" in found[0].message


def test_a_deleted_section_is_reported_once(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    del cfg["loss_fn"]
    found = [f for f in run_rules(cfg) if f.is_error and (f.key or "").startswith("loss_fn")]
    assert [f.code for f in found] == ["E-CONFIG-SECTION"]


def test_tp_logprob_batch_cites_the_running_version_and_upstreams_escape(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["megatron_cfg"]["tensor_model_parallel_size"] = 4
    cfg["policy"].update(train_micro_batch_size=1, logprob_batch_size=2)
    found = [f for f in run_rules(cfg, nemo_rl_version=V070) if f.code == "E-TP-LOGPROB-BATCH"]
    assert len(found) == 1 and "lm_policy.py:178-194" in found[0].message
    assert "NRL_IGNORE_TP_ACCURACY_CHECK" in (found[0].fix or "")


def test_tp_logprob_batch_honours_the_escape_in_the_jobs_environment(tmp_path: Path) -> None:
    """As upstream's grpo-qwen3-30ba3b-8n8g-megatron.sh, which exports the variable."""
    cfg = grpo_config(tmp_path)
    cfg["policy"]["megatron_cfg"]["tensor_model_parallel_size"] = 4
    cfg["policy"].update(train_micro_batch_size=1, logprob_batch_size=4)
    launch = LocalLaunch(
        Launcher((sys.executable,), "--launcher"), tmp_path, {"NRL_IGNORE_TP_ACCURACY_CHECK": "1"}
    )
    found = run_rules(cfg, nemo_rl_version=V070, local_launch=launch)
    assert "E-TP-LOGPROB-BATCH" not in error_codes(found)
    assert "E-TP-LOGPROB-BATCH" in codes_of(cfg)
