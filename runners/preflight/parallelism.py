"""Parallelism and batch-shape rules: what `Policy.__init__`, the vLLM workers and the first
training step assert about GPUs, parallel sizes and batch sizes (NeMo-RL at the pin)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from catalog.config_values import as_int
from catalog.errors import Finding
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import (
    TP_KEY,
    algorithm,
    cite,
    enabled,
    finding,
    generation,
    generation_gpus,
    layout,
    reward_model,
    teacher_nodes,
)

VLLM_WORLD_ASSERT = {"0.6.0": "vllm_generation.py:62", "0.7.0": "vllm_generation.py:110"}
# lm_policy.py's TP >= 4 check, Megatron's packing pad assert (megatron/data.py, v0.6.0
# :560-566) and TP top-k/top-p logprobs (distributed/model_utils.py) all arrive in 0.6.0;
# 0.4.0/0.5.0 pad by TP/CP themselves (megatron/common.py:259-264 at v0.5.0).
SINCE_060 = "0.6.0+"
TP_LOGPROB_ASSERT = {
    "0.6.0": "lm_policy.py:160-176",
    "0.7.0": "lm_policy.py:178-194",
    "pin": "lm_policy.py:206-223",
}


@rule("parallel_fit")
def parallel_fit(ctx: PreflightContext) -> Iterator[Finding]:
    """E-PARALLEL-FIT: TP x PP x CP divides the GPUs (lm_policy.py:226-240); vLLM TP x PP too."""
    err = partial(finding, ctx, "E-PARALLEL-FIT")
    lay = layout(ctx)
    if lay.gpus is None:
        yield from _reward_model_fit(ctx)
        return
    mp = lay.model_parallel
    if lay.backend and lay.gpus % mp:
        yield err(
            f"{lay.prefix}.{TP_KEY[lay.backend]}",
            f"TP({lay.tp}) x PP({lay.pp}) x CP({lay.cp}) = {mp} does not divide the "
            f"{lay.gpus} GPUs of {lay.gpus_source}",
            f"pick sizes whose product divides {lay.gpus}, or change cluster",
        )
    vllm = generation(ctx).get("vllm_cfg")
    gen_gpus = generation_gpus(ctx)
    if generation(ctx).get("backend") == "vllm" and isinstance(vllm, dict) and gen_gpus:
        # vLLM spans nodes when TP x PP > gpus_per_node (a unified placement group,
        # vllm_generation.py:177-184 at v0.7.0), so only divisibility is asserted
        tp = as_int(vllm.get("tensor_parallel_size")) or 1
        pp = as_int(vllm.get("pipeline_parallel_size")) or 1
        if gen_gpus % (tp * pp):
            yield err(
                "policy.generation.vllm_cfg.tensor_parallel_size",
                f"vLLM TP({tp}) x PP({pp}) = {tp * pp} does not divide the {gen_gpus} GPUs "
                f"vLLM runs on ({cite(ctx.nemo_rl_version, VLLM_WORLD_ASSERT)})",
                f"use a vLLM model-parallel size that divides {gen_gpus}",
            )


def _reward_model_fit(ctx: PreflightContext) -> Iterator[Finding]:
    """The reward model's reservation leaves the policy no node (several nodes) or no GPU (one
    node): grpo.setup asserts policy_nodes > 0 / policy_gpus_per_node > 0 (v0.7.0
    grpo.py:535-574)."""
    rm_nodes, rm_gpus = reward_model(ctx)
    total, per_node = as_int(ctx.get("cluster.num_nodes")), as_int(ctx.get("cluster.gpus_per_node"))
    if not (rm_nodes or rm_gpus) or not total or not per_node:
        return
    if total > 1 and total - rm_nodes - teacher_nodes(ctx) <= 0:
        key, what = "env.reward_model.resources.num_nodes", f"{rm_nodes} of {total} nodes"
    elif total == 1 and per_node - rm_gpus <= 0:
        key, what = "env.reward_model.resources.gpus_per_node", f"{rm_gpus} of {per_node} GPUs"
    else:
        return
    yield finding(
        ctx,
        "E-PARALLEL-FIT",
        key,
        f"the reward model holds {what}, leaving the policy none (grpo.setup asserts "
        "policy_nodes > 0 and policy_gpus_per_node > 0)",
        "raise cluster.num_nodes / cluster.gpus_per_node or give the reward model fewer",
    )


@rule("batch_divisibility")
def batch_divisibility(ctx: PreflightContext) -> Iterator[Finding]:
    """E-BATCH-DIVISIBILITY: rollout and train batches shard evenly over data-parallel ranks."""
    err = partial(finding, ctx, "E-BATCH-DIVISIBILITY")
    lay = layout(ctx)
    dp = lay.dp
    gbs = as_int(ctx.get("policy.train_global_batch_size"))
    mbs = as_int(ctx.get("policy.train_micro_batch_size"))
    fix = (
        f"data-parallel size = {lay.gpus} GPUs of {lay.gpus_source} / (TP x PP x CP) = {dp}; "
        "choose batch sizes that are multiples of it (and of the micro batch per rank)"
    )
    if algorithm(ctx) == "grpo":
        prompts = as_int(ctx.get("grpo.num_prompts_per_step"))
        gens = as_int(ctx.get("grpo.num_generations_per_prompt"))
        if prompts and gens:
            rollout = prompts * gens
            if dp and rollout % dp:
                yield err(
                    "grpo.num_prompts_per_step",
                    f"rollout batch {prompts} x {gens} = {rollout} is not divisible by the "
                    f"data-parallel size {dp}",
                    fix,
                )
            if gbs and rollout % gbs:  # batched_data_dict.py:537 (shard_by_batch_size)
                yield err(
                    "policy.train_global_batch_size",
                    f"rollout batch {rollout} is not a multiple of train_global_batch_size {gbs} "
                    "(fails at the first training step)",
                    "make num_prompts_per_step x num_generations_per_prompt a multiple of "
                    "policy.train_global_batch_size",
                )
    if not gbs or not dp:
        return
    if gbs % dp:  # batched_data_dict.py:541
        yield err(
            "policy.train_global_batch_size",
            f"{gbs} is not divisible by the data-parallel size {dp}",
            fix,
        )
        return
    dynamic = enabled(ctx.get("policy.dynamic_batching")) or enabled(
        ctx.get("policy.sequence_packing")
    )
    if mbs and not dynamic and (gbs // dp) % mbs:  # batched_data_dict.py:1011
        yield err(
            "policy.train_micro_batch_size",
            f"per-rank batch {gbs} / {dp} = {gbs // dp} is not a multiple of "
            f"train_micro_batch_size {mbs}",
            "make train_global_batch_size / data-parallel size a multiple of the micro batch",
        )


@rule("tp_logprob_batch", versions=SINCE_060)
def tp_logprob_batch(ctx: PreflightContext) -> Iterator[Finding]:
    """E-TP-LOGPROB-BATCH: TP >= 4 needs train_micro_batch_size == logprob_batch_size."""
    lay = layout(ctx)
    policy = ctx.get("policy", {}) or {}
    if lay.tp < 4 or "logprob_batch_size" not in policy:
        return
    if ctx.get("loss_fn.force_on_policy_ratio"):
        return  # grpo.setup sets NRL_IGNORE_TP_ACCURACY_CHECK=1 for it
    if ctx.local_launch is not None and ctx.local_launch.env.get("NRL_IGNORE_TP_ACCURACY_CHECK"):
        return  # upstream's own escape (its test suites export it for TP>=4 recipes)
    mbs, lbs = as_int(policy.get("train_micro_batch_size")), as_int(policy["logprob_batch_size"])
    if mbs is not None and lbs is not None and mbs != lbs:
        yield finding(
            ctx,
            "E-TP-LOGPROB-BATCH",
            "policy.logprob_batch_size",
            f"TP={lay.tp} (>= 4) requires train_micro_batch_size ({mbs}) == "
            f"logprob_batch_size ({lbs}) ({cite(ctx.nemo_rl_version, TP_LOGPROB_ASSERT)})",
            "set both to the same value, use TP <= 2, or loss_fn.force_on_policy_ratio=true "
            "(upstream's own escape hatch, NRL_IGNORE_TP_ACCURACY_CHECK=1 in the job's "
            "environment, skips the check and risks inaccurate logprobs)",
        )


@rule("sequence_divisibility", versions=SINCE_060)
def sequence_divisibility(ctx: PreflightContext) -> Iterator[Finding]:
    """E-SEQ-DIVISIBLE: make_sequence_length_divisible_by covers the CP/TP+SP pad factor."""
    err = partial(finding, ctx, "E-SEQ-DIVISIBLE")
    lay = layout(ctx)
    mult = as_int(ctx.get("policy.make_sequence_length_divisible_by"))
    if not mult:
        return
    key = "policy.make_sequence_length_divisible_by"
    if lay.backend == "megatron" and enabled(ctx.get("policy.sequence_packing")):
        factor = (lay.cp * 2 if lay.cp > 1 else 1) * (
            lay.tp if lay.tp > 1 and lay.sequence_parallel else 1
        )
        if mult % factor:  # megatron/data.py:1289
            yield err(
                key,
                f"{mult} is not a multiple of {factor} (CP x 2 when CP > 1, x TP with "
                "sequence parallel) required by Megatron sequence packing",
                f"set {key}={factor} (or a multiple)",
            )
            return
    gen = generation(ctx)
    top_k, top_p = gen.get("top_k"), gen.get("top_p")
    filtering = (top_k not in (None, -1)) or (isinstance(top_p, (int, float)) and top_p < 1)
    if lay.tp < 2 or not filtering:
        return
    dyn = ctx.get("policy.dynamic_batching")
    if enabled(dyn):  # every microbatch is padded to sequence_length_round (v0.7.0
        # batched_data_dict.py:645-653), which then sets the sequence's factor
        key, mult = (
            "policy.dynamic_batching.sequence_length_round",
            as_int(dyn.get("sequence_length_round")),
        )
    if mult and mult % lay.tp:  # distributed/model_utils.py (batch x sequence % TP)
        yield err(
            key,
            f"{mult} is not a multiple of TP={lay.tp}; top-k/top-p logprobs need "
            "batch x sequence divisible by TP (first training step)",
            f"set {key}={lay.tp} (or a multiple)",
        )


@rule("training_backend")
def training_backend(ctx: PreflightContext) -> Iterator[Finding]:
    """E-POLICY-BACKEND: exactly one of megatron_cfg / dtensor_cfg enabled (lm_policy.py:121)."""
    err = partial(finding, ctx, "E-POLICY-BACKEND")
    meg, dt = enabled(ctx.get("policy.megatron_cfg")), enabled(ctx.get("policy.dtensor_cfg"))
    if meg and dt:
        yield err(
            "policy.dtensor_cfg.enabled",
            "both Megatron and DTensor training backends are enabled",
            "set policy.dtensor_cfg.enabled=false or policy.megatron_cfg.enabled=false",
        )
    elif not meg and not dt and isinstance(ctx.get("policy"), dict):
        yield err(
            "policy.megatron_cfg.enabled",
            "no training backend is enabled",
            "set policy.megatron_cfg.enabled=true or policy.dtensor_cfg.enabled=true",
        )
    if enabled(ctx.get("policy.draft")) and not meg:
        yield err(
            "policy.draft.enabled",
            "draft-model training needs the Megatron backend (lm_policy.py:126)",
            "enable policy.megatron_cfg or disable policy.draft",
        )
    if dt and not meg:
        dcfg = ctx.get("policy.dtensor_cfg")
        if not dcfg.get("_v2") and (as_int(dcfg.get("dp_replicate_size")) or 1) > 1:
            yield err(
                "policy.dtensor_cfg.dp_replicate_size",
                "dp_replicate_size > 1 needs the DTensor v2 worker (lm_policy.py:176)",
                "set policy.dtensor_cfg._v2=true or dp_replicate_size=1",
            )


@rule("batching_modes")
def batching_modes(ctx: PreflightContext) -> Iterator[Finding]:
    """E-BATCHING-MODE: dynamic batching vs sequence packing vs PP, and DPO's restrictions."""
    err = partial(finding, ctx, "E-BATCHING-MODE")
    dyn, pack = (
        enabled(ctx.get("policy.dynamic_batching")),
        enabled(ctx.get("policy.sequence_packing")),
    )
    if algorithm(ctx) == "dpo" and (dyn or pack):  # dpo.py:163-170
        which = "dynamic_batching" if dyn else "sequence_packing"
        yield err(
            f"policy.{which}.enabled",
            f"{which} is not supported with DPO (it reorders the chosen/rejected pairs)",
            f"set policy.{which}.enabled=false",
        )
        return
    if dyn and pack:  # lm_policy.py:325
        yield err(
            "policy.sequence_packing.enabled",
            "dynamic batching and sequence packing are exclusive",
            "disable one of policy.dynamic_batching / policy.sequence_packing",
        )
    if dyn and layout(ctx).pp > 1:  # lm_policy.py:313
        yield err(
            "policy.dynamic_batching.enabled",
            "dynamic batching needs pipeline_model_parallel_size == 1",
            "disable dynamic batching or use PP=1",
        )


@rule("vllm_settings")
def vllm_settings(ctx: PreflightContext) -> Iterator[Finding]:
    """E-VLLM-SETTINGS: vLLM worker init asserts on PP/EP/async and sampling ranges."""
    err = partial(finding, ctx, "E-VLLM-SETTINGS")
    gen = generation(ctx)
    if gen.get("backend") != "vllm":
        return
    vllm = gen.get("vllm_cfg") if isinstance(gen.get("vllm_cfg"), dict) else {}
    tp = as_int(vllm.get("tensor_parallel_size")) or 1
    pp = as_int(vllm.get("pipeline_parallel_size")) or 1
    ep = as_int(vllm.get("expert_parallel_size")) or 1
    asyn = bool(vllm.get("async_engine"))
    base = "policy.generation.vllm_cfg"
    if pp > 1 and not asyn:  # vllm_generation.py:128
        yield err(
            f"{base}.async_engine",
            "vLLM pipeline_parallel_size > 1 needs async_engine=true",
            f"set {base}.async_engine=true",
        )
    if ep > 1 and ep % tp:  # vllm_generation.py:134
        yield err(
            f"{base}.expert_parallel_size",
            f"EP({ep}) must be a multiple of TP({tp})",
            "set expert_parallel_size to a multiple of tensor_parallel_size",
        )
    elif ep > 1 and ep != tp and asyn:  # vllm_generation.py:140
        yield err(
            f"{base}.async_engine",
            "EP != TP uses data parallelism inside vLLM, which async_engine does not support",
            f"set {base}.async_engine=false or EP == TP",
        )
    top_k, top_p = gen.get("top_k"), gen.get("top_p")
    if isinstance(top_k, int) and not isinstance(top_k, bool) and top_k != -1 and top_k < 1:
        yield err(
            "policy.generation.top_k",
            f"top_k={top_k}: use null/-1 (no filtering) or >= 1",
            "set policy.generation.top_k=null",
        )
    if isinstance(top_p, (int, float)) and not isinstance(top_p, bool) and not 0 < top_p <= 1:
        yield err(
            "policy.generation.top_p",
            f"top_p={top_p}: must be in (0, 1]",
            "set policy.generation.top_p=1.0",
        )
