"""What `grpo.setup()` and the GRPO scripts assert: async GRPO, sampling and loss settings,
multiple dataloaders, non-colocated generation resources and env names."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from catalog.config_values import as_int
from catalog.errors import Finding
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import (
    algorithm,
    dataset_entries,
    enabled,
    finding,
    generation,
    uses_gym,
)


def _grpo(ctx: PreflightContext) -> dict:
    value = ctx.get("grpo") if algorithm(ctx) == "grpo" else None
    return value if isinstance(value, dict) else {}


@rule("async_grpo_features")
def async_grpo_features(ctx: PreflightContext) -> Iterator[Finding]:
    """E-ASYNC-UNSUPPORTED: async GRPO rejects DAPO features and needs IS correction."""
    err = partial(finding, ctx, "E-ASYNC-UNSUPPORTED")
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
            yield err(key, "is not supported with async GRPO", fix)
    if not ctx.get("loss_fn.use_importance_sampling_correction"):  # grpo.py:4127
        yield err(
            "loss_fn.use_importance_sampling_correction",
            "async GRPO requires importance-sampling correction (off-policy samples)",
            "set loss_fn.use_importance_sampling_correction=true",
        )
    gen = generation(ctx)
    backend = gen.get("backend")
    vllm = gen.get("vllm_cfg") if isinstance(gen.get("vllm_cfg"), dict) else {}
    if backend == "vllm" and not vllm.get("async_engine") and not uses_gym(ctx):
        yield err(  # grpo.py:4120 (the Gym script turns async_engine on itself)
            "policy.generation.vllm_cfg.async_engine",
            "async GRPO needs an async generation engine",
            "set policy.generation.vllm_cfg.async_engine=true",
        )


@rule("grpo_sampling_settings")
def grpo_sampling_settings(ctx: PreflightContext) -> Iterator[Finding]:
    """E-GRPO-SAMPLING: grpo.setup's checks on batch_multiplier, val sampling and early stop."""
    err = partial(finding, ctx, "E-GRPO-SAMPLING")
    grpo = _grpo(ctx)
    if not grpo:
        return
    mult = grpo.get("batch_multiplier", 1)
    sampling = grpo.get("use_dynamic_sampling")
    if not sampling and isinstance(mult, (int, float)) and mult != 1:  # grpo.py:571
        yield err(
            "grpo.batch_multiplier",
            f"is {mult}; values other than 1 need use_dynamic_sampling",
            "set grpo.batch_multiplier=1 or grpo.use_dynamic_sampling=true",
        )
    k = as_int(grpo.get("val_num_generations_per_prompt", 1))
    if k is not None and k < 1:  # grpo.py:525
        yield err(
            "grpo.val_num_generations_per_prompt",
            "must be >= 1",
            "set grpo.val_num_generations_per_prompt=1",
        )
    metric = grpo.get("stop_at_validation_metric")
    if metric == "pass_k" and (k or 1) <= 1:  # grpo.py:530
        yield err(
            "grpo.stop_at_validation_metric",
            "'pass_k' needs grpo.val_num_generations_per_prompt > 1",
            "raise val_num_generations_per_prompt or stop on 'accuracy'",
        )
    if metric is not None and grpo.get("stop_at_validation_threshold") is None:  # grpo.py:577
        yield err(
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
        if overridden and not gym_vllm:  # grpo.py:511
            yield err(
                "policy.generation.val_temperature",
                "validation sampling different from training is only supported on vLLM NeMo-Gym "
                "runs",
                "set val_temperature/val_top_p/val_top_k to ${.temperature}/${.top_p}/${.top_k}",
            )
        if overridden and gym_vllm and gen.get("val_top_k"):  # grpo.py:521
            yield err(
                "policy.generation.val_top_k",
                "is not honoured on the NeMo-Gym path",
                "set policy.generation.val_top_k=null",
            )


@rule("grpo_loss_settings")
def grpo_loss_settings(ctx: PreflightContext) -> Iterator[Finding]:
    """E-GRPO-LOSS: force_on_policy_ratio and skipped reference logprobs (grpo.py:700-716)."""
    err = partial(finding, ctx, "E-GRPO-LOSS")
    grpo = _grpo(ctx)
    if not grpo:
        return
    loss = ctx.get("loss_fn", {}) or {}
    rollout = (as_int(grpo.get("num_prompts_per_step")) or 0) * (
        as_int(grpo.get("num_generations_per_prompt")) or 0
    )
    gbs = as_int(ctx.get("policy.train_global_batch_size"))
    if loss.get("force_on_policy_ratio") and gbs is not None and rollout != gbs:
        yield err(
            "loss_fn.force_on_policy_ratio",
            f"needs train_global_batch_size ({gbs}) == num_prompts_per_step x "
            f"num_generations_per_prompt ({rollout})",
            "make them equal or set loss_fn.force_on_policy_ratio=false",
        )
    kl = loss.get("reference_policy_kl_penalty", 0.01)
    if grpo.get("skip_reference_policy_logprobs_calculation") and kl != 0:
        yield err(
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
    if not (per and prompts):
        return
    total, per_b = int(prompts * mult), int(per * mult)
    if per_b == 0 or total % per_b != 0:  # grpo.py:584
        yield finding(
            ctx,
            "E-MULTI-DATALOADER",
            "data.num_prompts_per_dataloader",
            f"num_prompts_per_step ({total}) is not a multiple of it ({per_b})",
            "choose num_prompts_per_step as a multiple of data.num_prompts_per_dataloader",
        )


@rule("colocated_resources")
def colocated_resources(ctx: PreflightContext) -> Iterator[Finding]:
    """E-COLOCATION: non-colocated generation resources fit the cluster (grpo.py:860-915)."""
    err = partial(finding, ctx, "E-COLOCATION")
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
        if not (isinstance(inf_gpus, int) and inf_gpus > 0):
            yield err(
                f"{key}.gpus_per_node",
                "must be > 0 on one node with non-colocated inference",
                f"set {key}.gpus_per_node to the GPUs vLLM gets",
            )
        if inf_nodes not in (None, 1):
            yield err(
                f"{key}.num_nodes",
                "must be 1 or null on one node",
                f"set {key}.num_nodes=null",
            )
        if isinstance(inf_gpus, int) and per_node - inf_gpus <= 0:
            yield err(
                f"{key}.gpus_per_node",
                f"leaves no GPU for training ({per_node} - {inf_gpus})",
                "give vLLM fewer GPUs or add GPUs",
            )
    elif nodes > 1:
        if not (isinstance(inf_nodes, int) and 0 < inf_nodes < nodes):
            yield err(
                f"{key}.num_nodes",
                f"must be between 1 and {nodes - 1} with {nodes} nodes",
                f"set {key}.num_nodes",
            )
        if inf_gpus != per_node:
            yield err(
                f"{key}.gpus_per_node",
                f"must equal cluster.gpus_per_node ({per_node}) across nodes",
                f"set {key}.gpus_per_node={per_node}",
            )


@rule("env_name_exists")
def env_name_exists(ctx: PreflightContext) -> Iterator[Finding]:
    """E-ENV-NAME: every dataset's env_name (after data.default) is a section of env."""
    err = partial(finding, ctx, "E-ENV-NAME")
    env = ctx.get("env")
    if algorithm(ctx) != "grpo" or not isinstance(env, dict):
        return
    sections = [k for k, v in env.items() if isinstance(v, dict)]
    for key, entry, _ in dataset_entries(ctx):
        name = entry.get("env_name")
        if name is None:  # data/utils.py:189 indexes cfg["env_name"]
            yield err(
                f"{key}.env_name",
                "is not set (nor in data.default)",
                f"set data.default.env_name to one of: {', '.join(sections) or 'an env section'}",
            )
        elif name not in sections:  # data/utils.py:158 env_configs[env_name]
            near = [s for s in sections if s.lower() == str(name).lower()]
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            yield err(
                f"{key}.env_name",
                f"{name!r} is not a section under env (have: {', '.join(sections)}){hint}",
                "use env_name=math with env.math, or nemo_gym with env.nemo_gym",
            )
