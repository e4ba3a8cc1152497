"""What `grpo.setup()`, `dpo.setup()`, the example scripts and the checkpoint manager assert
about the config before (or at) the first step, checked before any GPU starts."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from catalog.errors import Finding
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import (
    UNRESOLVED,
    algorithm,
    as_int,
    enabled,
    finding,
    generation,
    uses_gym,
    warning,
)

STEP_DIR = re.compile(r"^step_(\d+)$")


def _grpo(ctx: PreflightContext) -> dict:
    value = ctx.get("grpo") if algorithm(ctx) == "grpo" else None
    return value if isinstance(value, dict) else {}


@rule("async_grpo_features")
def async_grpo_features(ctx: PreflightContext) -> Iterator[Finding]:
    """E-ASYNC-UNSUPPORTED: async GRPO rejects DAPO features and needs IS correction."""
    grpo = _grpo(ctx)
    if not enabled(grpo.get("async_grpo")):
        return
    fix = "turn grpo.async_grpo.enabled off, or drop the feature"
    rejected = [  # run_grpo.py:184-203, run_grpo_nemo_gym.py:285-305
        ("grpo.use_dynamic_sampling", bool(grpo.get("use_dynamic_sampling"))),
        ("grpo.reward_scaling.enabled", enabled(grpo.get("reward_scaling"))),
        ("grpo.reward_shaping.enabled", enabled(grpo.get("reward_shaping"))),
        ("data.use_multiple_dataloader", bool(ctx.get("data.use_multiple_dataloader"))),
    ]
    for key, on in rejected:
        if on:
            yield finding(ctx, "E-ASYNC-UNSUPPORTED", key, "is not supported with async GRPO", fix)
    if not ctx.get("loss_fn.use_importance_sampling_correction"):  # grpo.py:4127
        yield finding(
            ctx,
            "E-ASYNC-UNSUPPORTED",
            "loss_fn.use_importance_sampling_correction",
            "async GRPO requires importance-sampling correction (off-policy samples)",
            "set loss_fn.use_importance_sampling_correction=true",
        )
    gen = generation(ctx)
    backend = gen.get("backend")
    vllm = gen.get("vllm_cfg") if isinstance(gen.get("vllm_cfg"), dict) else {}
    if backend == "vllm" and not vllm.get("async_engine") and not uses_gym(ctx):
        yield finding(  # grpo.py:4120 (the Gym script turns async_engine on itself)
            ctx,
            "E-ASYNC-UNSUPPORTED",
            "policy.generation.vllm_cfg.async_engine",
            "async GRPO needs an async generation engine",
            "set policy.generation.vllm_cfg.async_engine=true",
        )


def _has_validation_data(ctx: PreflightContext) -> bool:
    val = ctx.get("data.validation")
    if isinstance(val, (dict, list)) and val:
        return True
    if ctx.get("data.val_data_paths"):
        return True
    train = ctx.get("data.train")
    entries = train if isinstance(train, list) else [train]
    return any(isinstance(e, dict) and e.get("split_validation_size") for e in entries)


@rule("validation_settings")
def validation_settings(ctx: PreflightContext) -> Iterator[Finding]:
    """E-VALIDATION-SETTINGS: validation period, data and checkpoint metric set together."""
    algo = algorithm(ctx)
    section = ctx.get(algo) if algo else None
    if not isinstance(section, dict):
        return
    has_data = _has_validation_data(ctx)
    period = as_int(section.get("val_period")) or 0
    wants = period > 0 or bool(section.get("val_at_start")) or bool(section.get("val_at_end"))
    fix = (
        "give data.validation.data_path, or set data.validation=null "
        f"{algo}.val_period=0 {algo}.val_at_start=false checkpointing.metric_name=null"
    )
    if wants and not has_data:  # grpo.py:638, dpo.py:414
        yield finding(
            ctx,
            "E-VALIDATION-SETTINGS",
            f"{algo}.val_period",
            "validation is on (val_period > 0, val_at_start or val_at_end) but there is no "
            "validation data",
            fix,
        )
    metric = ctx.get("checkpointing.metric_name")
    if (
        isinstance(metric, str)
        and metric.startswith("val:")
        and enabled(ctx.get("checkpointing"))
        and not wants
    ):
        yield finding(  # grpo.py:3549 at the first checkpoint
            ctx,
            "E-VALIDATION-SETTINGS",
            "checkpointing.metric_name",
            f"{metric!r} ranks checkpoints by a validation metric but validation never runs",
            fix,
        )


@rule("checkpoint_metric_name")
def checkpoint_metric_name(ctx: PreflightContext) -> Iterator[Finding]:
    """E-CHECKPOINT-METRIC: metric_name is null or 'val:<m>' / 'train:<m>' (grpo.py:3540)."""
    metric = ctx.get("checkpointing.metric_name")
    if metric is None or metric == UNRESOLVED or not enabled(ctx.get("checkpointing")):
        return
    if not (
        isinstance(metric, str) and metric.split(":", 1)[0] in {"val", "train"} and ":" in metric
    ):
        yield finding(
            ctx,
            "E-CHECKPOINT-METRIC",
            "checkpointing.metric_name",
            f"{metric!r} must start with 'val:' or 'train:' (fails at the first checkpoint)",
            "e.g. checkpointing.metric_name=val:accuracy, or null to keep the latest",
        )


@rule("resume_checkpoint")
def resume_checkpoint(ctx: PreflightContext) -> Iterator[Finding]:
    """W-RESUME-CHECKPOINT: step_N folders in checkpoint_dir: NeMo-RL resumes from the latest."""
    value = ctx.get("checkpointing.checkpoint_dir")
    if not isinstance(value, str) or not value or value == UNRESOLVED:
        return
    path = Path(value).expanduser()
    if not path.is_dir():
        return
    steps = sorted(
        (int(m.group(1)), p.name)
        for p in path.iterdir()
        if (m := STEP_DIR.match(p.name)) and p.is_dir()
    )
    if steps:
        yield warning(
            ctx,
            "W-RESUME-CHECKPOINT",
            "checkpointing.checkpoint_dir",
            f"{path} holds {len(steps)} checkpoint(s); NeMo-RL resumes from {steps[-1][1]} "
            "(weights, optimizer, dataloader and step counter)",
            "keep it to resume; for a fresh run pass checkpointing.checkpoint_dir=<new folder>",
        )


@rule("setup_indexed_keys")
def setup_indexed_keys(ctx: PreflightContext) -> Iterator[Finding]:
    """E-SETUP-KEY: keys the schema calls optional but setup indexes directly (KeyError)."""
    algo = algorithm(ctx)
    needed: list[tuple[str, str]] = [
        ("checkpointing.keep_top_k", "checkpoint.py:172"),
        ("checkpointing.save_optimizer", "checkpoint.py:175"),
        ("data.num_workers", "grpo.py:599" if algo == "grpo" else "dpo.py:214"),
        ("policy.sequence_packing", "lm_policy.py:339" if algo == "grpo" else "dpo.py:167"),
    ]
    if algo == "grpo":
        needed += [
            ("data.use_multiple_dataloader", "grpo.py:560"),
            ("policy.generation.colocated", "grpo.py:726"),
        ]
        if ctx.get("data.use_multiple_dataloader"):
            needed.append(("data.num_prompts_per_dataloader", "grpo.py:561"))
    for key, where in needed:
        if _missing(ctx, key):
            parent = key.rpartition(".")[0]
            if parent and not isinstance(ctx.get(parent), dict):
                continue  # the schema rule reports the missing section
            yield finding(
                ctx,
                "E-SETUP-KEY",
                key,
                f"is optional in NeMo-RL's schema but {where} reads it directly (KeyError)",
                f"add {key} (see the step's config/default.yaml)",
            )


def _missing(ctx: PreflightContext, dotted: str) -> bool:
    sentinel: Any = object()
    return ctx.get(dotted, sentinel) is sentinel


def _check(ctx: PreflightContext, cond: bool, code: str, key: str, msg: str, fix: str):
    return [finding(ctx, code, key, msg, fix)] if cond else []


@rule("grpo_sampling_settings")
def grpo_sampling_settings(ctx: PreflightContext) -> Iterator[Finding]:
    """E-GRPO-SAMPLING: grpo.setup's checks on batch_multiplier, val sampling and early stop."""
    grpo = _grpo(ctx)
    if not grpo:
        return
    code = "E-GRPO-SAMPLING"
    mult = grpo.get("batch_multiplier", 1)
    yield from _check(  # grpo.py:571
        ctx,
        not grpo.get("use_dynamic_sampling") and isinstance(mult, (int, float)) and mult != 1,
        code,
        "grpo.batch_multiplier",
        f"is {mult}; values other than 1 need use_dynamic_sampling",
        "set grpo.batch_multiplier=1 or grpo.use_dynamic_sampling=true",
    )
    k = as_int(grpo.get("val_num_generations_per_prompt", 1))
    yield from _check(  # grpo.py:525
        ctx,
        k is not None and k < 1,
        code,
        "grpo.val_num_generations_per_prompt",
        "must be >= 1",
        "set grpo.val_num_generations_per_prompt=1",
    )
    metric = grpo.get("stop_at_validation_metric")
    yield from _check(  # grpo.py:530
        ctx,
        metric == "pass_k" and (k or 1) <= 1,
        code,
        "grpo.stop_at_validation_metric",
        "'pass_k' needs grpo.val_num_generations_per_prompt > 1",
        "raise val_num_generations_per_prompt or stop on 'accuracy'",
    )
    yield from _check(  # grpo.py:577
        ctx,
        metric is not None and grpo.get("stop_at_validation_threshold") is None,
        code,
        "grpo.stop_at_validation_threshold",
        "must be set when stop_at_validation_metric is set",
        "set grpo.stop_at_validation_threshold or stop_at_validation_metric=null",
    )
    gen = generation(ctx)
    if gen and all(k in gen for k in ("temperature", "val_temperature")):
        overridden = any(
            gen.get(f"val_{p}") != gen.get(p) for p in ("temperature", "top_p", "top_k")
        )
        gym_vllm = gen.get("backend") == "vllm" and uses_gym(ctx)
        yield from _check(  # grpo.py:511
            ctx,
            overridden and not gym_vllm,
            code,
            "policy.generation.val_temperature",
            "validation sampling different from training is only supported on vLLM NeMo-Gym runs",
            "set val_temperature/val_top_p/val_top_k to ${.temperature}/${.top_p}/${.top_k}",
        )
        yield from _check(  # grpo.py:521
            ctx,
            overridden and gym_vllm and bool(gen.get("val_top_k")),
            code,
            "policy.generation.val_top_k",
            "is not honoured on the NeMo-Gym path",
            "set policy.generation.val_top_k=null",
        )


@rule("grpo_loss_settings")
def grpo_loss_settings(ctx: PreflightContext) -> Iterator[Finding]:
    """E-GRPO-LOSS: force_on_policy_ratio and skipped reference logprobs (grpo.py:700-716)."""
    grpo = _grpo(ctx)
    if not grpo:
        return
    loss = ctx.get("loss_fn", {}) or {}
    rollout = (as_int(grpo.get("num_prompts_per_step")) or 0) * (
        as_int(grpo.get("num_generations_per_prompt")) or 0
    )
    gbs = as_int(ctx.get("policy.train_global_batch_size"))
    yield from _check(
        ctx,
        bool(loss.get("force_on_policy_ratio")) and gbs is not None and rollout != gbs,
        "E-GRPO-LOSS",
        "loss_fn.force_on_policy_ratio",
        f"needs train_global_batch_size ({gbs}) == num_prompts_per_step x "
        f"num_generations_per_prompt ({rollout})",
        "make them equal or set loss_fn.force_on_policy_ratio=false",
    )
    kl = loss.get("reference_policy_kl_penalty", 0.01)
    yield from _check(
        ctx,
        bool(grpo.get("skip_reference_policy_logprobs_calculation")) and kl != 0,
        "E-GRPO-LOSS",
        "grpo.skip_reference_policy_logprobs_calculation",
        f"needs loss_fn.reference_policy_kl_penalty == 0 (is {kl})",
        "set loss_fn.reference_policy_kl_penalty=0 or keep the reference logprobs",
    )


@rule("multiple_dataloaders")
def multiple_dataloaders(ctx: PreflightContext) -> Iterator[Finding]:
    """E-MULTI-DATALOADER: num_prompts_per_step is a multiple of num_prompts_per_dataloader."""
    grpo = _grpo(ctx)
    if not grpo or not ctx.get("data.use_multiple_dataloader"):
        return
    per = as_int(ctx.get("data.num_prompts_per_dataloader"))
    prompts = as_int(grpo.get("num_prompts_per_step"))
    mult = grpo.get("batch_multiplier", 1) if grpo.get("use_dynamic_sampling") else 1
    if per and prompts:
        total, per_b = int(prompts * mult), int(per * mult)
        yield from _check(  # grpo.py:584
            ctx,
            per_b == 0 or total % per_b != 0,
            "E-MULTI-DATALOADER",
            "data.num_prompts_per_dataloader",
            f"num_prompts_per_step ({total}) is not a multiple of it ({per_b})",
            "choose num_prompts_per_step as a multiple of data.num_prompts_per_dataloader",
        )


@rule("fused_linear_logprobs")
def fused_linear_logprobs(ctx: PreflightContext) -> Iterator[Finding]:
    """E-FUSED-LOGPROBS: Megatron fused linear logprobs vs sequence packing and top-k/top-p."""
    meg = ctx.get("policy.megatron_cfg")
    if not (enabled(meg) and meg.get("use_fused_linear_logprobs")):
        return
    key = "policy.megatron_cfg.use_fused_linear_logprobs"
    yield from _check(  # grpo.py:672, dpo.py:175
        ctx,
        enabled(ctx.get("policy.sequence_packing")),
        "E-FUSED-LOGPROBS",
        key,
        "is not supported with sequence packing",
        f"set {key}=false or policy.sequence_packing.enabled=false",
    )
    gen = generation(ctx)
    top_k, top_p = gen.get("top_k"), gen.get("top_p")
    filtering = top_k not in (None, -1, 0) or (isinstance(top_p, (int, float)) and top_p < 1)
    yield from _check(  # grpo.py:682
        ctx,
        algorithm(ctx) == "grpo" and filtering,
        "E-FUSED-LOGPROBS",
        key,
        "is not supported with top-k/top-p filtering at training time",
        f"set {key}=false, or policy.generation.top_k=null top_p=1.0",
    )


@rule("colocated_resources")
def colocated_resources(ctx: PreflightContext) -> Iterator[Finding]:
    """E-COLOCATION: non-colocated generation resources fit the cluster (grpo.py:860-915)."""
    gen = generation(ctx)
    col = gen.get("colocated")
    if algorithm(ctx) != "grpo" or not isinstance(col, dict) or col.get("enabled", True):
        return
    res = col.get("resources") if isinstance(col.get("resources"), dict) else {}
    nodes = as_int(ctx.get("cluster.num_nodes")) or 0
    per_node = as_int(ctx.get("cluster.gpus_per_node")) or 0
    inf_gpus, inf_nodes = res.get("gpus_per_node"), res.get("num_nodes")
    key = "policy.generation.colocated.resources"
    if nodes == 1:
        yield from _check(
            ctx,
            not (isinstance(inf_gpus, int) and inf_gpus > 0),
            "E-COLOCATION",
            f"{key}.gpus_per_node",
            "must be > 0 on one node with non-colocated inference",
            f"set {key}.gpus_per_node to the GPUs vLLM gets",
        )
        yield from _check(
            ctx,
            inf_nodes not in (None, 1),
            "E-COLOCATION",
            f"{key}.num_nodes",
            "must be 1 or null on one node",
            f"set {key}.num_nodes=null",
        )
        yield from _check(
            ctx,
            isinstance(inf_gpus, int) and per_node - inf_gpus <= 0,
            "E-COLOCATION",
            f"{key}.gpus_per_node",
            f"leaves no GPU for training ({per_node} - {inf_gpus})",
            "give vLLM fewer GPUs or add GPUs",
        )
    elif nodes > 1:
        yield from _check(
            ctx,
            not (isinstance(inf_nodes, int) and 0 < inf_nodes < nodes),
            "E-COLOCATION",
            f"{key}.num_nodes",
            f"must be between 1 and {nodes - 1} with {nodes} nodes",
            f"set {key}.num_nodes",
        )
        yield from _check(
            ctx,
            inf_gpus != per_node,
            "E-COLOCATION",
            f"{key}.gpus_per_node",
            f"must equal cluster.gpus_per_node ({per_node}) across nodes",
            f"set {key}.gpus_per_node={per_node}",
        )


def _dataset_entries(ctx: PreflightContext) -> Iterator[tuple[str, dict]]:
    """Each train/validation dataset entry with data.default merged in, as data/utils.py does."""
    default = ctx.get("data.default")
    default = default if isinstance(default, dict) else {}
    for split in ("train", "validation"):
        value = ctx.get(f"data.{split}")
        entries = value if isinstance(value, list) else [value]
        for i, entry in enumerate(entries):
            if isinstance(entry, dict):
                key = f"data.{split}[{i}]" if isinstance(value, list) else f"data.{split}"
                yield key, {**default, **entry}


@rule("env_name_exists")
def env_name_exists(ctx: PreflightContext) -> Iterator[Finding]:
    """E-ENV-NAME: every dataset's env_name (after data.default) is a section of env."""
    env = ctx.get("env")
    if algorithm(ctx) != "grpo" or not isinstance(env, dict):
        return
    sections = [k for k, v in env.items() if isinstance(v, dict)]
    for key, entry in _dataset_entries(ctx):
        name = entry.get("env_name")
        if name is None:  # data/utils.py:189 indexes cfg["env_name"]
            yield finding(
                ctx,
                "E-ENV-NAME",
                f"{key}.env_name",
                "is not set (nor in data.default)",
                f"set data.default.env_name to one of: {', '.join(sections) or 'an env section'}",
            )
        elif name not in sections:  # data/utils.py:158 env_configs[env_name]
            near = [s for s in sections if s.lower() == str(name).lower()]
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            yield finding(
                ctx,
                "E-ENV-NAME",
                f"{key}.env_name",
                f"{name!r} is not a section under env (have: {', '.join(sections)}){hint}",
                "use env_name=math with env.math, or nemo_gym with env.nemo_gym",
            )
