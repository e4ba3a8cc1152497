"""The optimizer and scheduler sections the DTensor worker indexes, which the schema types as
optional (a Megatron policy has its own): a null is a TypeError a minute after launch.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

from catalog.errors import Finding
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import UNRESOLVED, algorithm, enabled, finding

EXAMPLE_CONFIG = {"dpo": "examples/configs/dpo.yaml", "grpo": "examples/configs/grpo_math_1B.yaml"}
SHIPPED_CONFIG = {"dpo": "tiny_dtensor", "grpo": "tiny_dtensor"}


def _example(ctx: PreflightContext) -> str:
    algo = algorithm(ctx) or "dpo"
    shipped = f" (or use config {SHIPPED_CONFIG[algo]})" if algo in SHIPPED_CONFIG else ""
    return f"as in NeMo-RL's {EXAMPLE_CONFIG.get(algo, EXAMPLE_CONFIG['dpo'])}{shipped}"


def _named(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("name"), str)
        and isinstance(item.get("kwargs"), dict)
    )


def optimizer_problem(value: Any) -> str | None:
    """Why the DTensor worker cannot build a torch optimizer from `policy.optimizer`."""
    if value == UNRESOLVED:
        return None
    if not isinstance(value, dict):
        return "is null" if value is None else f"is a {type(value).__name__}"
    missing = [k for k in ("name", "kwargs") if k not in value]
    if missing:
        return f"has no {' and no '.join(missing)}"
    if not _named(value):
        return "needs name (a dotted torch optimizer class) and kwargs (a mapping)"
    return None


def scheduler_problem(value: Any) -> str | None:
    """Why the DTensor worker cannot build its LR schedule from a present `policy.scheduler`."""
    if value == UNRESOLVED or _named(value):
        return None  # one {name, kwargs} scheduler
    if not isinstance(value, list):
        return "is null" if value is None else f"is a {type(value).__name__}"
    named = [item for item in value if _named(item)]
    milestones = [item for item in value if isinstance(item, dict) and "milestones" in item]
    if len(named) + len(milestones) != len(value):
        return "has an item that is neither {name, kwargs} nor {milestones: [...]}"
    if not milestones:
        return "is a list without its {milestones: [...]} item (SequentialLR needs it)"
    wanted = len(named) - 1
    got = milestones[-1].get("milestones")
    if not isinstance(got, list) or len(got) != wanted:
        return f"needs {wanted} milestone(s) for its {len(named)} schedulers (SequentialLR)"
    return None


@rule("backend_sections")
def backend_sections(ctx: PreflightContext) -> Iterator[Finding]:
    """E-BACKEND-SECTION: DTensor's torch optimizer and scheduler sections are usable."""
    err = partial(finding, ctx, "E-BACKEND-SECTION")
    if not enabled(ctx.get("policy.dtensor_cfg")) or enabled(ctx.get("policy.megatron_cfg")):
        return
    policy = ctx.get("policy")
    if not isinstance(policy, dict):
        return
    example = _example(ctx)
    problem = optimizer_problem(policy["optimizer"]) if "optimizer" in policy else "is missing"
    if problem:
        yield err(
            "policy.optimizer",
            f"{problem}, but the DTensor policy builds its torch optimizer from "
            "policy.optimizer.name and .kwargs (the Megatron one under megatron_cfg is unused)",
            "set policy.optimizer={name: torch.optim.AdamW, kwargs: {lr: ..., weight_decay: ..., "
            f"foreach: false, fused: false}}}} {example}",
        )
    if "scheduler" in policy:
        problem = scheduler_problem(policy["scheduler"])
        if problem:
            yield err(
                "policy.scheduler",
                f"{problem}; the DTensor policy builds its LR schedule from it when the key is "
                "present",
                "give a list of {name, kwargs} schedulers ending with {milestones: [...]} (one "
                f"fewer than the schedulers), or remove the key for a constant LR, {example}",
            )
