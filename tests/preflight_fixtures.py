"""Valid baseline GRPO and DPO configs (every section NeMo-RL's MasterConfig requires at the pin),
a Gym variant, and a helper that runs all preflight rules over a config."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from catalog.manifest import StepManifest
from runners.preflight import PreflightContext, preflight

GYM_ROW = {
    "responses_create_params": {"input": [{"role": "user", "content": "What is 2+2?"}]},
    "agent_ref": {"type": "responses_api_agents", "name": "math_with_judge_simple_agent"},
    "question": "What is 2+2?",
    "expected_answer": "4",
}
PLAIN_ROW = {"problem": "What is 2+2?", "expected_answer": "4"}


def _megatron() -> dict:
    return {
        "enabled": True,
        "empty_unused_memory_level": 1,
        "activation_checkpointing": False,
        "tensor_model_parallel_size": 1,
        "pipeline_model_parallel_size": 1,
        "num_layers_in_first_pipeline_stage": None,
        "num_layers_in_last_pipeline_stage": None,
        "context_parallel_size": 1,
        "pipeline_dtype": "bfloat16",
        "sequence_parallel": False,
        "freeze_moe_router": True,
        "expert_tensor_parallel_size": 1,
        "expert_model_parallel_size": 1,
        "apply_rope_fusion": True,
        "bias_activation_fusion": True,
        "gradient_accumulation_fusion": False,  # NotRequired, but read by megatron/setup.py
        "use_fused_weighted_squared_relu": False,
        "moe_per_layer_logging": False,
        "moe_enable_deepep": False,
        "moe_token_dispatcher_type": "alltoall",
        "moe_shared_expert_overlap": False,
        "optimizer": {
            "optimizer": "adam",
            "lr": 3.0e-7,
            "min_lr": 3.0e-8,
            "weight_decay": 0.01,
            "bf16": True,
            "fp16": False,
            "params_dtype": "float32",
            "adam_beta1": 0.9,
            "adam_beta2": 0.999,
            "adam_eps": 1e-8,
            "sgd_momentum": 0.9,
            "use_distributed_optimizer": True,
            "use_precision_aware_optimizer": True,
            "clip_grad": 1.0,
            "optimizer_cpu_offload": False,
            "optimizer_offload_fraction": 0.0,
        },
        "scheduler": {
            "start_weight_decay": 0.01,
            "end_weight_decay": 0.01,
            "weight_decay_incr_style": "constant",
            "lr_decay_style": "constant",
            "lr_decay_iters": None,
            "lr_warmup_iters": 1,
            "lr_warmup_init": 3.0e-8,
        },
        "distributed_data_parallel_config": {
            "grad_reduce_in_fp32": False,
            "overlap_grad_reduce": True,
            "overlap_param_gather": True,
            "use_custom_fsdp": False,
            "data_parallel_sharding_strategy": "optim_grads_params",
        },
    }


def _policy(generation: bool) -> dict:
    policy: dict[str, Any] = {
        "model_name": "Qwen/Qwen3-0.6B",
        "tokenizer": {"name": "Qwen/Qwen3-0.6B"},
        "train_global_batch_size": 16,
        "train_micro_batch_size": 1,
        "logprob_batch_size": 2,
        "precision": "bfloat16",
        "dtensor_cfg": {"enabled": False},
        "megatron_cfg": _megatron(),
        "dynamic_batching": {"enabled": False},
        "sequence_packing": {"enabled": False},
        "make_sequence_length_divisible_by": 1,
        "max_total_sequence_length": 1024,
        "max_grad_norm": 1.0,
    }
    if generation:
        policy["draft"] = {"enabled": False}  # examples/run_grpo.py reads it directly
        policy["generation"] = {
            "backend": "vllm",
            "max_new_tokens": 512,
            "temperature": 1.0,
            "top_p": 1.0,
            "top_k": None,
            "val_temperature": 1.0,
            "val_top_p": 1.0,
            "val_top_k": None,
            "stop_token_ids": None,
            "stop_strings": None,
            "colocated": {"enabled": True, "resources": {"gpus_per_node": None, "num_nodes": None}},
            "vllm_cfg": {
                "async_engine": False,
                "precision": "bfloat16",
                "enforce_eager": False,  # NotRequired, but the vLLM worker reads it
                "tensor_parallel_size": 1,
                "pipeline_parallel_size": 1,
                "expert_parallel_size": 1,
                "gpu_memory_utilization": 0.6,
                "max_model_len": 1024,
                "kv_cache_dtype": "auto",
            },
        }
    return policy


def _common(tmp: Path, generation: bool) -> dict:
    return {
        "policy": _policy(generation),
        "cluster": {"gpus_per_node": 8, "num_nodes": 1},
        "checkpointing": {
            "enabled": True,
            "checkpoint_dir": str(tmp / "checkpoints"),
            "metric_name": "val:accuracy",
            "higher_is_better": True,
            "save_period": 10,
            "keep_top_k": 3,
            "save_optimizer": True,
            "checkpoint_must_save_by": None,  # NotRequired, but grpo_train reads it
        },
        "logger": {
            "log_dir": str(tmp / "logs"),
            "wandb_enabled": False,
            "swanlab_enabled": False,
            "tensorboard_enabled": False,
            "mlflow_enabled": False,
            "wandb": {"project": "steps"},
            "monitor_gpus": False,
            "gpu_monitoring": {"collection_interval": 10, "flush_interval": 10},
        },
    }


def write_rows(path: Path, row: dict, n: int = 4) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for _ in range(n)), encoding="utf-8")
    return path


def grpo_config(tmp: Path) -> dict:
    """A valid math-environment GRPO config with its plain-row data files."""
    train = write_rows(tmp / "data" / "train.jsonl", PLAIN_ROW)
    val = write_rows(tmp / "data" / "val.jsonl", PLAIN_ROW)
    cfg = _common(tmp, generation=True)
    cfg["logger"]["num_val_samples_to_print"] = 0
    cfg.update(
        {
            "loss_fn": {"reference_policy_kl_penalty": 0.01},
            "env": {"math": {"num_workers": 1}},
            "data": {
                "max_input_seq_length": 512,
                "shuffle": True,
                "num_workers": 1,
                "use_multiple_dataloader": False,
                "train": {"data_path": str(train)},
                "validation": {"data_path": str(val)},
                "default": {
                    "dataset_name": "ResponseDataset",
                    "input_key": "problem",
                    "output_key": "expected_answer",
                    "env_name": "math",
                },
            },
            "grpo": {
                "num_prompts_per_step": 8,
                "num_generations_per_prompt": 4,
                "max_num_steps": 10,
                "val_period": 5,
                "val_batch_size": 8,
                "max_val_samples": 8,
                "seed": 42,
                "async_grpo": {"enabled": False},
            },
        }
    )
    return cfg


# A resource server's source as Gym lays it out: verify() takes a request model whose own fields
# are the row's task fields (read with ast by catalog/contracts/gym_servers.py, never run).
SERVER_APP = """\
from nemo_gym.base_resources_server import BaseVerifyRequest, SimpleResourcesServer


class TaskVerifyRequest(BaseVerifyRequest):
{fields}

class TaskServer(SimpleResourcesServer):
    async def verify(self, body: TaskVerifyRequest):
        raise NotImplementedError
"""
MATH_FIELDS = "    question: str\n    expected_answer: str\n"
FOLLOW_FIELDS = "    id: int\n    kwargs: list = []\n"


def gym_root(tmp: Path) -> Path:
    """A minimal Gym checkout: the training model config, math_with_judge, instruction_following."""
    root = tmp / "Gym"
    model = root / "responses_api_models/vllm_model/configs/vllm_model_for_training.yaml"
    server = root / "resources_servers/math_with_judge/configs/math_with_judge.yaml"
    model.parent.mkdir(parents=True)
    server.parent.mkdir(parents=True)
    model.write_text("policy_model:\n  responses_api_models:\n    vllm_model: {}\n")
    server.write_text(
        "math_with_judge:\n  resources_servers:\n    math_with_judge: {domain: math}\n"
        "math_with_judge_simple_agent:\n  responses_api_agents:\n    simple_agent:\n"
        "      resources_server: {type: resources_servers, name: math_with_judge}\n"
    )
    follow = root / "resources_servers/instruction_following/configs/instruction_following.yaml"
    follow.parent.mkdir(parents=True)
    follow.write_text(  # nemo_gym_tiny loads it too: rl_prep -c tiny routes chat rows there
        "instruction_following:\n  resources_servers:\n    instruction_following: {}\n"
        "instruction_following_simple_agent:\n  responses_api_agents:\n    simple_agent:\n"
        "      resources_server: {type: resources_servers, name: instruction_following}\n"
    )
    for rs, fields in (("math_with_judge", MATH_FIELDS), ("instruction_following", FOLLOW_FIELDS)):
        (root / "resources_servers" / rs / "app.py").write_text(SERVER_APP.format(fields=fields))
    return root


def gym_config(tmp: Path) -> dict:
    """A valid NeMo-Gym GRPO config: Gym rows, config_paths, max_val_samples null."""
    cfg = grpo_config(tmp)
    train = write_rows(tmp / "data" / "gym_train.jsonl", GYM_ROW)
    val = write_rows(tmp / "data" / "gym_val.jsonl", GYM_ROW)
    cfg["data"]["train"] = {"data_path": str(train)}
    cfg["data"]["validation"] = {"data_path": str(val)}
    cfg["data"]["default"] = {
        "dataset_name": "NemoGymDataset",
        "env_name": "nemo_gym",
        "processor": "nemo_gym_data_processor",
    }
    cfg["env"] = {
        "should_use_nemo_gym": True,
        "nemo_gym": {
            "config_paths": [
                "responses_api_models/vllm_model/configs/vllm_model_for_training.yaml",
                "resources_servers/math_with_judge/configs/math_with_judge.yaml",
            ]
        },
    }
    cfg["grpo"]["max_val_samples"] = None
    cfg["grpo"]["val_batch_size"] = None
    cfg["policy"]["generation"]["vllm_cfg"]["async_engine"] = True
    cfg["run"] = {"gym_root": str(gym_root(tmp))}
    return cfg


def dpo_config(tmp: Path) -> dict:
    """A valid DPO config with preference rows."""
    row = {"prompt": "Say hi", "chosen": "Hi!", "rejected": "No."}
    train = write_rows(tmp / "data" / "pref_train.jsonl", row)
    val = write_rows(tmp / "data" / "pref_val.jsonl", row)
    cfg = _common(tmp, generation=False)
    cfg["checkpointing"]["metric_name"] = "val:validation-default_loss"
    cfg["checkpointing"]["higher_is_better"] = False
    cfg.update(
        {
            "data": {
                "max_input_seq_length": 1024,
                "shuffle": True,
                "num_workers": 1,
                "train": {"dataset_name": "BinaryPreferenceDataset", "data_path": str(train)},
                "validation": {"dataset_name": "BinaryPreferenceDataset", "data_path": str(val)},
            },
            "dpo": {"max_num_steps": 10, "val_period": 5, "val_at_start": False},
        }
    )
    return cfg


def manifest(algorithm: str = "grpo") -> StepManifest:
    return StepManifest.model_validate(
        {
            "step": {
                "id": f"rl/test/{algorithm}",
                "name": "test step",
                "category": "rl",
                "description": "preflight test step",
                "version": "0.1.0",
            },
            "run": {"runner": "nemo_rl", "algorithm": algorithm},
        }
    )


def run_rules(config: dict, algorithm: str = "grpo", **ctx: Any) -> list:
    """All registered preflight rules over a deep copy of `config`."""
    context = PreflightContext(
        step_id=f"rl/test/{algorithm}",
        manifest=manifest(algorithm),
        config=copy.deepcopy(config),
        **ctx,
    )
    return preflight(context)


def codes(findings: list) -> set[str]:
    return {f.code for f in findings}


def error_codes(findings: list) -> set[str]:
    return {f.code for f in findings if f.is_error}


def context_for(config_file: Path, step_dir: Path, version: str | None = None) -> PreflightContext:
    """The preflight context of a real config file of the step in `step_dir`, compiled as `run`
    does for NeMo-RL `version` (a release number or "pin"; default: unknown, so the pin's
    schema and overlays and every rule)."""
    from catalog.tomlfile import load_toml
    from runners.nemo_rl import checkout as nemo_rl

    step_manifest = StepManifest.model_validate(load_toml(step_dir / "step.toml"))
    target = nemo_rl.Target(None, nemo_rl.detect_version(None, version))
    compiled = nemo_rl.compile_for(target, step_manifest.run.algorithm, config_file, [])
    return PreflightContext(
        step_id=step_manifest.step.id,
        manifest=step_manifest,
        config=compiled.resolved(),
        config_file=config_file,
        compiled=compiled,
        nemo_rl_version=target.version,
    )
