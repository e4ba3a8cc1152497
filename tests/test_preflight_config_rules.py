"""Each config rule, planted as one defect in an otherwise valid config, reports its code."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from preflight_fixtures import (
    GYM_ROW,
    PLAIN_ROW,
    codes,
    dpo_config,
    error_codes,
    grpo_config,
    gym_config,
    run_rules,
    write_rows,
)
from user_configs import GRPO_STATE


@pytest.mark.parametrize(
    ("build", "algorithm"),
    [(grpo_config, "grpo"), (gym_config, "grpo"), (dpo_config, "dpo")],
    ids=["grpo", "gym", "dpo"],
)
def test_valid_baseline_has_no_finding(tmp_path: Path, build: Callable, algorithm: str) -> None:
    assert run_rules(build(tmp_path), algorithm) == []


def _set(cfg: dict, dotted: str, value: object) -> None:
    *parents, last = dotted.split(".")
    node = cfg
    for p in parents:
        node = node[p]
    node[last] = value


def _delete(cfg: dict, dotted: str) -> None:
    *parents, last = dotted.split(".")
    node = cfg
    for p in parents:
        node = node[p]
    del node[last]


# (test id, baseline, algorithm, {dotted key: value}, keys to delete, expected code, expected key)
CASES = [
    (
        "rollout_not_divisible_by_dp",
        grpo_config,
        "grpo",
        {
            "grpo.num_prompts_per_step": 3,
            "grpo.num_generations_per_prompt": 1,
            "policy.train_global_batch_size": 3,
        },
        [],
        "E-BATCH-DIVISIBILITY",
        "grpo.num_prompts_per_step",
    ),
    (
        "train_batch_not_divisible_by_dp",
        grpo_config,
        "grpo",
        {"policy.train_global_batch_size": 4, "grpo.num_prompts_per_step": 8},
        [],
        "E-BATCH-DIVISIBILITY",
        "policy.train_global_batch_size",
    ),
    (
        "rollout_not_multiple_of_train_batch",
        grpo_config,
        "grpo",
        {"policy.train_global_batch_size": 24},
        [],
        "E-BATCH-DIVISIBILITY",
        "policy.train_global_batch_size",
    ),
    (
        "micro_batch_does_not_divide_rank_batch",
        dpo_config,
        "dpo",
        {"policy.train_micro_batch_size": 3},
        [],
        "E-BATCH-DIVISIBILITY",
        "policy.train_micro_batch_size",
    ),
    (
        "megatron_parallel_sizes_exceed_gpus",
        grpo_config,
        "grpo",
        {"policy.megatron_cfg.tensor_model_parallel_size": 3},
        [],
        "E-PARALLEL-FIT",
        "policy.megatron_cfg.tensor_model_parallel_size",
    ),
    (
        "vllm_tp_not_dividing_the_gpus",  # larger than a node is fine: vLLM spans nodes
        grpo_config,
        "grpo",
        {"policy.generation.vllm_cfg.tensor_parallel_size": 3, "cluster.num_nodes": 2},
        [],
        "E-PARALLEL-FIT",
        "policy.generation.vllm_cfg.tensor_parallel_size",
    ),
    (
        "gym_max_val_samples_set",
        gym_config,
        "grpo",
        {"grpo.max_val_samples": 16},
        [],
        "E-GYM-MAX-VAL",
        "grpo.max_val_samples",
    ),
    (
        "async_with_dynamic_sampling",
        grpo_config,
        "grpo",
        {
            "grpo.async_grpo.enabled": True,
            "grpo.use_dynamic_sampling": True,
            "loss_fn.use_importance_sampling_correction": True,
            "policy.generation.vllm_cfg.async_engine": True,
        },
        [],
        "E-ASYNC-UNSUPPORTED",
        "grpo.use_dynamic_sampling",
    ),
    (
        "async_with_reward_scaling",
        grpo_config,
        "grpo",
        {
            "grpo.async_grpo.enabled": True,
            "grpo.reward_scaling": {"enabled": True},
            "loss_fn.use_importance_sampling_correction": True,
            "policy.generation.vllm_cfg.async_engine": True,
        },
        [],
        "E-ASYNC-UNSUPPORTED",
        "grpo.reward_scaling.enabled",
    ),
    (
        "async_with_multiple_dataloaders",
        grpo_config,
        "grpo",
        {
            "grpo.async_grpo.enabled": True,
            "data.use_multiple_dataloader": True,
            "data.num_prompts_per_dataloader": 8,
            "loss_fn.use_importance_sampling_correction": True,
            "policy.generation.vllm_cfg.async_engine": True,
        },
        [],
        "E-ASYNC-UNSUPPORTED",
        "data.use_multiple_dataloader",
    ),
    (
        "async_without_importance_sampling",
        grpo_config,
        "grpo",
        {"grpo.async_grpo.enabled": True, "policy.generation.vllm_cfg.async_engine": True},
        [],
        "E-ASYNC-UNSUPPORTED",
        "loss_fn.use_importance_sampling_correction",
    ),
    (
        "val_period_without_validation_data",
        grpo_config,
        "grpo",
        {"data.validation": None},
        [],
        "E-VALIDATION-SETTINGS",
        "grpo.val_period",
    ),
    (
        "env_name_not_under_env",
        grpo_config,
        "grpo",
        {"data.default.env_name": "Math"},
        [],
        "E-ENV-NAME",
        "data.train.env_name",
    ),
    (
        "env_name_missing_everywhere",
        grpo_config,
        "grpo",
        {},
        ["data.default.env_name"],
        "E-ENV-NAME",
        "data.train.env_name",
    ),
    (
        "tp4_with_different_logprob_batch",
        grpo_config,
        "grpo",
        {"policy.megatron_cfg.tensor_model_parallel_size": 4},
        [],
        "E-TP-LOGPROB-BATCH",
        "policy.logprob_batch_size",
    ),
    (
        "cp_with_packing_needs_pad_factor",
        grpo_config,
        "grpo",
        {
            "policy.megatron_cfg.context_parallel_size": 2,
            "policy.sequence_packing": {
                "enabled": True,
                "train_mb_tokens": 1024,
                "algorithm": "modified_first_fit_decreasing",
            },
            "policy.make_sequence_length_divisible_by": 2,
        },
        [],
        "E-SEQ-DIVISIBLE",
        "policy.make_sequence_length_divisible_by",
    ),
    (
        "tp_with_top_k_needs_divisible_length",
        grpo_config,
        "grpo",
        {
            "policy.megatron_cfg.tensor_model_parallel_size": 2,
            "policy.generation.top_k": 50,
            "policy.generation.val_top_k": 50,
        },
        [],
        "E-SEQ-DIVISIBLE",
        "policy.make_sequence_length_divisible_by",
    ),
    (
        "both_training_backends_enabled",
        grpo_config,
        "grpo",
        {
            "policy.dtensor_cfg": {
                "enabled": True,
                "tensor_parallel_size": 1,
                "context_parallel_size": 1,
                "sequence_parallel": False,
                "activation_checkpointing": False,
                "cpu_offload": False,
            }
        },
        [],
        "E-POLICY-BACKEND",
        "policy.dtensor_cfg.enabled",
    ),
    (
        "no_training_backend_enabled",
        grpo_config,
        "grpo",
        {"policy.megatron_cfg": {"enabled": False}},
        [],
        "E-POLICY-BACKEND",
        "policy.megatron_cfg.enabled",
    ),
    (
        "dpo_with_dynamic_batching",
        dpo_config,
        "dpo",
        {
            "policy.dynamic_batching": {
                "enabled": True,
                "train_mb_tokens": 1024,
                "sequence_length_round": 64,
            }
        },
        [],
        "E-BATCHING-MODE",
        "policy.dynamic_batching.enabled",
    ),
    (
        "dynamic_batching_and_packing",
        grpo_config,
        "grpo",
        {
            "policy.dynamic_batching": {
                "enabled": True,
                "train_mb_tokens": 1024,
                "sequence_length_round": 64,
            },
            "policy.sequence_packing": {
                "enabled": True,
                "train_mb_tokens": 1024,
                "algorithm": "modified_first_fit_decreasing",
            },
        },
        [],
        "E-BATCHING-MODE",
        "policy.sequence_packing.enabled",
    ),
    (
        "vllm_pipeline_parallel_without_async",
        grpo_config,
        "grpo",
        {"policy.generation.vllm_cfg.pipeline_parallel_size": 2},
        [],
        "E-VLLM-SETTINGS",
        "policy.generation.vllm_cfg.async_engine",
    ),
    (
        "vllm_top_p_out_of_range",
        grpo_config,
        "grpo",
        {"policy.generation.top_p": 0.0, "policy.generation.val_top_p": 0.0},
        [],
        "E-VLLM-SETTINGS",
        "policy.generation.top_p",
    ),
    (
        "unknown_generation_backend",
        grpo_config,
        "grpo",
        {"policy.generation.backend": "vlm"},
        [],
        "E-GEN-BACKEND",
        "policy.generation.backend",
    ),
    (
        "vllm_backend_without_vllm_cfg",
        grpo_config,
        "grpo",
        {},
        ["policy.generation.vllm_cfg"],
        "E-GEN-BACKEND",
        "policy.generation.vllm_cfg",
    ),
    (
        "gym_with_overlong_filtering",
        gym_config,
        "grpo",
        {"grpo.overlong_filtering": True},
        [],
        "E-OVERLONG-GYM",
        "grpo.overlong_filtering",
    ),
    (
        "gym_with_sglang_generation",  # vLLM, and Megatron from 0.7.0, serve Gym
        gym_config,
        "grpo",
        {"policy.generation.backend": "sglang"},
        [],
        "E-GYM-GENERATION",
        "policy.generation.backend",
    ),
    (
        "reward_penalties_without_gym",
        grpo_config,
        "grpo",
        {"reward_penalties": {"penalize_empty_final_answer": True}},
        [],
        "E-REWARD-PENALTIES",
        "reward_penalties.penalize_empty_final_answer",
    ),
    (
        "batch_multiplier_without_dynamic_sampling",
        grpo_config,
        "grpo",
        {"grpo.batch_multiplier": 2.0},
        [],
        "E-GRPO-SAMPLING",
        "grpo.batch_multiplier",
    ),
    (
        "early_stop_without_threshold",
        grpo_config,
        "grpo",
        {"grpo.stop_at_validation_metric": "accuracy"},
        [],
        "E-GRPO-SAMPLING",
        "grpo.stop_at_validation_threshold",
    ),
    (
        "pass_k_stop_with_one_generation",
        grpo_config,
        "grpo",
        {"grpo.stop_at_validation_metric": "pass_k", "grpo.stop_at_validation_threshold": 0.5},
        [],
        "E-GRPO-SAMPLING",
        "grpo.stop_at_validation_metric",
    ),
    (
        "val_sampling_override_without_gym",
        grpo_config,
        "grpo",
        {"policy.generation.val_temperature": 0.6},
        [],
        "E-GRPO-SAMPLING",
        "policy.generation.val_temperature",
    ),
    (
        "force_on_policy_ratio_with_two_updates",
        grpo_config,
        "grpo",
        {"loss_fn.force_on_policy_ratio": True},
        [],
        "E-GRPO-LOSS",
        "loss_fn.force_on_policy_ratio",
    ),
    (
        "skip_reference_with_kl_penalty",
        grpo_config,
        "grpo",
        {"grpo.skip_reference_policy_logprobs_calculation": True},
        [],
        "E-GRPO-LOSS",
        "grpo.skip_reference_policy_logprobs_calculation",
    ),
    (
        "prompts_not_multiple_of_dataloader_share",
        grpo_config,
        "grpo",
        {"data.use_multiple_dataloader": True, "data.num_prompts_per_dataloader": 3},
        [],
        "E-MULTI-DATALOADER",
        "data.num_prompts_per_dataloader",
    ),
    (
        "fused_logprobs_with_sequence_packing",
        grpo_config,
        "grpo",
        {
            "policy.megatron_cfg.use_fused_linear_logprobs": True,
            "policy.sequence_packing": {
                "enabled": True,
                "train_mb_tokens": 1024,
                "algorithm": "modified_first_fit_decreasing",
            },
        },
        [],
        "E-FUSED-LOGPROBS",
        "policy.megatron_cfg.use_fused_linear_logprobs",
    ),
    (
        "non_colocated_inference_takes_every_gpu",
        grpo_config,
        "grpo",
        {
            "policy.generation.colocated": {
                "enabled": False,
                "resources": {"gpus_per_node": 8, "num_nodes": None},
            }
        },
        [],
        "E-COLOCATION",
        "policy.generation.colocated.resources.gpus_per_node",
    ),
    (
        "checkpoint_metric_without_prefix",
        grpo_config,
        "grpo",
        {"checkpointing.metric_name": "accuracy"},
        [],
        "E-CHECKPOINT-METRIC",
        "checkpointing.metric_name",
    ),
    (
        "keep_top_k_missing",
        grpo_config,
        "grpo",
        {},
        ["checkpointing.keep_top_k"],
        "E-SETUP-KEY",
        "checkpointing.keep_top_k",
    ),
    (
        "sequence_packing_missing",
        dpo_config,
        "dpo",
        {},
        ["policy.sequence_packing"],
        "E-SETUP-KEY",
        "policy.sequence_packing",
    ),
    (
        "colocated_missing",
        grpo_config,
        "grpo",
        {},
        ["policy.generation.colocated"],
        "E-SETUP-KEY",
        "policy.generation.colocated",
    ),
]


@pytest.mark.parametrize(
    ("build", "algorithm", "sets", "deletes", "code", "key"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_planted_defect_reports_its_code(
    tmp_path: Path,
    build: Callable,
    algorithm: str,
    sets: dict,
    deletes: list,
    code: str,
    key: str,
) -> None:
    cfg = build(tmp_path)
    for dotted, value in sets.items():
        _set(cfg, dotted, value)
    for dotted in deletes:
        _delete(cfg, dotted)
    found = [f for f in run_rules(cfg, algorithm) if f.code == code]
    assert found, f"expected {code}"
    assert key in {f.key for f in found}
    assert all(f.is_error and f.fix for f in found)


def test_gym_flag_false_with_gym_rows_is_a_mismatch(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    write_rows(Path(cfg["data"]["train"]["data_path"]), GYM_ROW)
    assert "E-GYM-DATA-MISMATCH" in error_codes(run_rules(cfg))


def test_gym_flag_true_with_plain_rows_is_a_mismatch(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    write_rows(Path(cfg["data"]["train"]["data_path"]), PLAIN_ROW)
    found = [f for f in run_rules(cfg) if f.code == "E-GYM-DATA-MISMATCH"]
    assert found and found[0].key == "env.should_use_nemo_gym"


def test_mismatch_sniffs_first_non_empty_line(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    path = Path(cfg["data"]["train"]["data_path"])
    path.write_text("\n\n" + path.read_text())
    assert "E-GYM-DATA-MISMATCH" not in codes(run_rules(cfg))


def test_absent_train_file_is_a_warning_naming_it(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    missing = tmp_path / "nowhere.jsonl"
    cfg["data"]["train"]["data_path"] = str(missing)
    found = [f for f in run_rules(cfg) if f.code == "W-PREFLIGHT-UNCHECKED"]
    assert found and not found[0].is_error and str(missing) in found[0].message


def test_existing_step_folders_warn_of_resume(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    for n in (10, 2):
        step = Path(cfg["checkpointing"]["checkpoint_dir"]) / f"step_{n}"
        step.mkdir(parents=True)
        (step / "training_info.json").write_text(json.dumps(GRPO_STATE), encoding="utf-8")
    found = [f for f in run_rules(cfg) if f.code == "W-RESUME-CHECKPOINT"]
    assert len(found) == 1 and not found[0].is_error and "step_10" in found[0].message


def test_empty_checkpoint_dir_does_not_warn(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    Path(cfg["checkpointing"]["checkpoint_dir"]).mkdir(parents=True)
    assert "W-RESUME-CHECKPOINT" not in codes(run_rules(cfg))


def test_env_name_in_list_entry_is_checked_after_default_merge(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    train = cfg["data"]["train"]
    cfg["data"]["train"] = [train, {**train, "env_name": "code"}]
    found = [f for f in run_rules(cfg) if f.code == "E-ENV-NAME"]
    assert [f.key for f in found] == ["data.train[1].env_name"]


def test_tp4_check_is_waived_by_force_on_policy_ratio(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["megatron_cfg"]["tensor_model_parallel_size"] = 4
    cfg["loss_fn"]["force_on_policy_ratio"] = True
    cfg["policy"]["train_global_batch_size"] = 32
    assert "E-TP-LOGPROB-BATCH" not in codes(run_rules(cfg))
