"""GRPO's loss settings: the asserts `ClippedPGLossFn(loss_fn)` runs at setup, on the driver."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from catalog.errors import Finding
from catalog.nemo_rl_version import in_range
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import algorithm, cite, finding, warning

OLD, NEW = "nemo_rl/algorithms/loss_functions.py", "nemo_rl/algorithms/loss/loss_functions.py"


def _at(lines: dict[str, int]) -> dict[str, str]:
    return {v: f"{OLD if v in ('0.4.0', '0.5.0') else NEW}:{n}" for v, n in lines.items()}


SEQUENCE_VS_TOKEN = _at({"0.4.0": 130, "0.5.0": 144, "0.6.0": 209, "0.7.0": 250, "pin": 266})
TIS_SWITCH = _at({"0.7.0": 276, "pin": 292})  # `if truncated_importance_sampling_type is not None`
TIS_NEEDS_CORRECTION = _at({"0.4.0": 134, "0.5.0": 148, "0.6.0": 213, "0.7.0": 277, "pin": 293})
TIS_RATIO = _at({"0.4.0": 137, "0.5.0": 151, "0.6.0": 216, "0.7.0": 288, "pin": 304})
TIS_TYPE = _at({"0.6.0": 219, "0.7.0": 280, "pin": 296})
TIS_MIN_ORDER = _at({"0.7.0": 293, "pin": 309})
TIS_MIN_NEEDED = _at({"0.7.0": 301, "pin": 317})
SEQ_MASK_TIS = _at({"0.6.0": 228, "0.7.0": 305, "pin": 321})
CISPO = {  # the five use_cispo asserts, 0.7.0 then the pin
    "disable_ppo_ratio": _at({"0.7.0": 256, "pin": 272}),
    "force_on_policy_ratio": _at({"0.7.0": 260, "pin": 276}),
    "sequence_level_importance_ratios": _at({"0.7.0": 264, "pin": 280}),
    "ratio_clip_c": _at({"0.7.0": 268, "pin": 284}),
    "token_level_loss": _at({"0.7.0": 273, "pin": 289}),
}
DUAL_CLIP = _at({"0.4.0": 310, "0.5.0": 343, "0.6.0": 415, "0.7.0": 491, "pin": 555})
TIS_TYPES = ("tis", "icepop", "seq-mask-tis")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


@rule("loss_function")
def loss_function(ctx: PreflightContext) -> Iterator[Finding]:
    """E-LOSS-FN: loss_fn settings ClippedPGLossFn asserts against; W-LOSS-FN: a truncated
    importance sampling ratio 0.7.0+ ignores (no type)."""
    loss = ctx.get("loss_fn")
    if algorithm(ctx) != "grpo" or not isinstance(loss, dict):
        return
    version = ctx.nemo_rl_version
    seq_level = bool(loss.get("sequence_level_importance_ratios", False))
    token_level = bool(loss.get("token_level_loss", True))

    def error(key: str, message: str, fix: str, places: dict[str, str]) -> Finding:
        message = f"{message} (assert at {cite(version, places)})"
        return finding(ctx, "E-LOSS-FN", f"loss_fn.{key}", message, fix)

    if seq_level and token_level:
        yield error(
            "sequence_level_importance_ratios",
            "sequence-level importance ratios (GSPO) need a sequence-level loss, but "
            "loss_fn.token_level_loss is true",
            "set loss_fn.token_level_loss=false for GSPO, or "
            "loss_fn.sequence_level_importance_ratios=false",
            SEQUENCE_VS_TOKEN,
        )
    yield from _truncated_importance_sampling(ctx, loss, seq_level, error)
    if in_range(version, "0.7.0+") and loss.get("use_cispo"):
        conflicts = {
            "disable_ppo_ratio": bool(loss.get("disable_ppo_ratio")),
            "force_on_policy_ratio": bool(loss.get("force_on_policy_ratio")),
            "sequence_level_importance_ratios": seq_level,
            "ratio_clip_c": loss.get("ratio_clip_c") is not None,
            "token_level_loss": not token_level,
        }
        for key, clash in conflicts.items():
            if clash:
                wanted = {"token_level_loss": "true", "ratio_clip_c": "null"}.get(key, "false")
                yield error(
                    "use_cispo",
                    f"CISPO cannot be combined with loss_fn.{key}={loss.get(key)!r}",
                    f"set loss_fn.{key}={wanted}, or loss_fn.use_cispo=false",
                    CISPO[key],
                )
    clip_c = _number(loss.get("ratio_clip_c"))
    if clip_c is not None and clip_c <= 1:
        yield error(
            "ratio_clip_c",
            f"dual clipping needs ratio_clip_c > 1, got {loss.get('ratio_clip_c')!r}; the "
            "first training step fails",
            "set loss_fn.ratio_clip_c=3 (the usual value) or null to turn dual clipping off",
            DUAL_CLIP,
        )


def _truncated_importance_sampling(
    ctx: PreflightContext, loss: dict, seq_level: bool, error: Any
) -> Iterator[Finding]:
    version = ctx.nemo_rl_version
    by_type = in_range(version, "0.7.0+")  # the key that turns TIS on (unknown: the newest)
    switch = f"truncated_importance_sampling_{'type' if by_type else 'ratio'}"
    if loss.get(switch) is None:
        if by_type and loss.get("truncated_importance_sampling_ratio") is not None:
            yield warning(
                ctx,
                "W-LOSS-FN",
                "loss_fn.truncated_importance_sampling_ratio",
                "is set but truncated_importance_sampling_type is null: from 0.7.0 the type turns "
                "truncated importance sampling on, so this ratio is ignored and no weight is "
                f"truncated ({cite(version, TIS_SWITCH)})",
                "set loss_fn.truncated_importance_sampling_type=tis (with "
                "use_importance_sampling_correction=true), or the ratio to null",
            )
        return
    kind, ratio = (
        loss.get("truncated_importance_sampling_type"),
        loss.get("truncated_importance_sampling_ratio"),
    )
    ratio_n = _number(ratio)
    ratio_min = _number(loss.get("truncated_importance_sampling_ratio_min"))
    if not loss.get("use_importance_sampling_correction"):
        yield error(
            switch,
            f"truncated importance sampling is on ({switch}={loss.get(switch)!r}) but "
            "loss_fn.use_importance_sampling_correction is false",
            f"set loss_fn.use_importance_sampling_correction=true, or loss_fn.{switch}=null",
            TIS_NEEDS_CORRECTION,
        )
    if ratio_n is None or ratio_n <= 0:
        yield error(
            "truncated_importance_sampling_ratio",
            f"truncated importance sampling needs a positive ratio, got {ratio!r}",
            "set loss_fn.truncated_importance_sampling_ratio (e.g. 2.0)",
            TIS_RATIO,
        )
    if not in_range(version, "0.6.0+"):
        return
    if kind not in TIS_TYPES:
        yield error(
            "truncated_importance_sampling_type",
            f"must be one of {', '.join(TIS_TYPES)}, got {kind!r}",
            "set loss_fn.truncated_importance_sampling_type=tis",
            TIS_TYPE,
        )
    if in_range(version, "0.7.0+"):
        if ratio_min is not None and ratio_n is not None and ratio_min > ratio_n:
            yield error(
                "truncated_importance_sampling_ratio_min",
                f"must be <= truncated_importance_sampling_ratio ({ratio!r})",
                "lower loss_fn.truncated_importance_sampling_ratio_min",
                TIS_MIN_ORDER,
            )
        if kind in ("icepop", "seq-mask-tis") and ratio_min is None:
            yield error(
                "truncated_importance_sampling_ratio_min",
                f"is required with truncated_importance_sampling_type={kind}",
                "set loss_fn.truncated_importance_sampling_ratio_min (e.g. 0.5)",
                TIS_MIN_NEEDED,
            )
    if kind == "seq-mask-tis" and seq_level:
        yield error(
            "truncated_importance_sampling_type",
            "seq-mask-tis corrects per token and cannot be combined with "
            "sequence_level_importance_ratios=true",
            "use another truncated_importance_sampling_type, or turn sequence-level ratios off",
            SEQ_MASK_TIS,
        )
