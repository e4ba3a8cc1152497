"""What every algorithm's setup asserts before the first step: validation settings, the
checkpoint metric, keys read directly, and Megatron's fused logprobs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial

from catalog.config_values import as_int
from catalog.errors import Finding
from catalog.nemo_rl_version import in_range
from catalog.schema_paths import type_at
from runners.nemo_rl.schema.key_reads import missing_reads
from runners.preflight import PreflightContext, rule
from runners.preflight.schema import run_schema
from runners.preflight.schema_types import describe
from runners.preflight.topology import (
    UNRESOLVED,
    algorithm,
    cite,
    enabled,
    finding,
    generation,
    uses_gym,
    warning,
)

DPO_NO_VAL_METRICS = {"0.6.0": "dpo.py:687-693", "0.7.0": "dpo.py:694-700", "pin": "dpo.py:706-712"}
_ABSENT = object()
GRPO_NO_VAL_METRICS = {
    "0.6.0": "grpo.py:1988-1995",
    "0.7.0": "grpo.py:2911-2918",
    "pin": "grpo.py:3550-3557",
}


def _has_validation_data(ctx: PreflightContext) -> bool:
    """Whether the data section names validation data (before 0.6.0 a hub dataset brings its own
    split: v0.5.0 examples/run_grpo.py:103-113)."""
    gym = run_schema(ctx, "grpo") if algorithm(ctx) == "grpo" and uses_gym(ctx) else None
    if gym and (gym.doc.get("gym") or {}).get("data"):  # 0.5.0's Gym script always opens
        return True  # validation_jsonl_fpath (:210); a missing one is the schema's KeyError
    data = ctx.get("data")
    if isinstance(data, dict) and "dataset_name" in data and "train" not in data:
        return bool(data.get("val_data_path") or data.get("val_data_paths")) or not data.get(
            "train_data_path"
        )
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
    if wants and not has_data and algo == "dpo":  # DPO validates nothing and trains on
        yield warning(
            ctx,
            "W-VALIDATION-SETTINGS",
            f"{algo}.val_period",
            "validation is on but there is no validation data: NeMo-RL's DPO validates nothing "
            "and warns at each checkpoint that no validation metric was collected "
            f"({cite(ctx.nemo_rl_version, DPO_NO_VAL_METRICS)}); checkpoints are not ranked",
            fix,
        )
    elif wants and not has_data:  # grpo.py's assert (v0.7.0 :408)
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
        places = DPO_NO_VAL_METRICS if algo == "dpo" else GRPO_NO_VAL_METRICS
        yield warning(  # NeMo-RL warns at each checkpoint and keeps it unranked, trains on
            ctx,
            "W-VALIDATION-SETTINGS",
            "checkpointing.metric_name",
            f"{metric!r} ranks checkpoints by a validation metric but validation never runs: "
            "NeMo-RL warns at each checkpoint that no val metric was collected "
            f"({cite(ctx.nemo_rl_version, places)}); checkpoints are not ranked",
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


@rule("setup_indexed_keys")
def setup_indexed_keys(ctx: PreflightContext) -> Iterator[Finding]:
    """E-SETUP-KEY: keys the schema calls optional but NeMo-RL's code indexes directly (the
    schema's `reads`, and setup's own list below)."""
    err = partial(finding, ctx, "E-SETUP-KEY")
    algo = algorithm(ctx)
    found = run_schema(ctx, algo) if algo else None
    version = (found.doc.get("upstream", {}).get("version") if found else None) or "the pin"
    derived = dict(missing_reads(found.doc, ctx.config)) if found else {}
    for key, where in derived.items():
        yield err(
            key,
            f"is optional in NeMo-RL's schema but NeMo-RL {version} reads it directly at "
            f"{where} (a KeyError once that code runs)",
            f"add it, as every NeMo-RL example config that reaches that code does: "
            f"{_addition(found.doc, key)}",
        )
    since_060 = in_range(ctx.nemo_rl_version, "0.6.0+")  # 0.4/0.5 read neither (v0.6.0
    # checkpoint.py:104 and grpo.py:281 are the first direct reads)
    needed: list[tuple[str, str]] = [
        ("checkpointing.keep_top_k", "checkpoint.py:172"),
        ("data.num_workers", "grpo.py:599" if algo == "grpo" else "dpo.py:214"),
        ("policy.sequence_packing", "lm_policy.py:339" if algo == "grpo" else "dpo.py:167"),
    ]
    if since_060:
        needed.append(("checkpointing.save_optimizer", "checkpoint.py:175"))
    if algo == "grpo":
        needed.append(("policy.generation.colocated", "grpo.py:726"))
        if since_060:
            needed.append(("data.use_multiple_dataloader", "grpo.py:560"))
        if since_060 and ctx.get("data.use_multiple_dataloader"):
            needed.append(("data.num_prompts_per_dataloader", "grpo.py:561"))
    for key, where in needed:
        if key not in derived and ctx.get(key, _ABSENT) is _ABSENT:
            parent = key.rpartition(".")[0]
            if parent and not isinstance(ctx.get(parent), dict):
                continue  # the schema rule reports the missing section
            yield err(
                key,
                f"is optional in NeMo-RL's schema but {where} reads it directly (KeyError)",
                f"add {key} (see the step's config/default.yaml)",
            )


def _addition(doc: dict, key: str) -> str:
    """The override that adds a missing key: null where its type takes None."""
    t = type_at(doc, re.sub(r"\[\d+\]", "", key)) or {"t": "any"}
    options = t["options"] if t["t"] == "union" else [t]
    if any(o.get("name", "").endswith("Disabled") for o in options):
        return f"+{key}.enabled=false"  # a switchable section (DraftConfigDisabled)
    value = "null" if any(o["t"] in {"none", "any"} for o in options) else f"<{describe(t)}>"
    return f"+{key}={value}"


@rule("fused_linear_logprobs", versions="pin")
def fused_linear_logprobs(ctx: PreflightContext) -> Iterator[Finding]:
    """E-FUSED-LOGPROBS: Megatron fused linear logprobs vs sequence packing and top-k/top-p."""
    err = partial(finding, ctx, "E-FUSED-LOGPROBS")
    meg = ctx.get("policy.megatron_cfg")
    if not (enabled(meg) and meg.get("use_fused_linear_logprobs")):
        return
    key = "policy.megatron_cfg.use_fused_linear_logprobs"
    if enabled(ctx.get("policy.sequence_packing")):  # grpo.py:672, dpo.py:175
        yield err(
            key,
            "is not supported with sequence packing",
            f"set {key}=false or policy.sequence_packing.enabled=false",
        )
    gen = generation(ctx)
    top_k, top_p = gen.get("top_k"), gen.get("top_p")
    filtering = top_k not in (None, -1, 0) or (isinstance(top_p, (int, float)) and top_p < 1)
    if algorithm(ctx) == "grpo" and filtering:  # grpo.py:682
        yield err(
            key,
            "is not supported with top-k/top-p filtering at training time",
            f"set {key}=false, or policy.generation.top_k=null top_p=1.0",
        )
