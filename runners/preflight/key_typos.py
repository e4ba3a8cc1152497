"""A key within an edit or two of exactly one declared key is a typo (E-SCHEMA-TYPO), not a
knob: NeMo-RL keeps undeclared keys, so `grpo.max_num_stesp` runs with the default silently. A key
kept on purpose is listed in the config's `run.keep_keys`.
"""

from __future__ import annotations

from collections.abc import Iterable

from catalog.config_values import dotted_get
from catalog.did_you_mean import typo_of
from runners.preflight import PreflightContext

KEEP = "run.keep_keys"
TYPO = "E-SCHEMA-TYPO"


def kept(ctx: PreflightContext, dotted: str) -> bool:
    """Whether the config lists `dotted` under run.keep_keys."""
    keep = dotted_get(ctx.config, KEEP)
    return isinstance(keep, list) and dotted in keep


def typo(ctx: PreflightContext, dotted: str, leaf: str, declared: Iterable[str]) -> str | None:
    """The declared key `leaf` (at `dotted`) is a typo of, when it is set in a config file
    (an override's `+key=` adds a key on purpose) and not kept; else None."""
    if kept(ctx, dotted):
        return None
    near = typo_of(leaf, declared)
    if near is None or ctx.compiled is None:
        return None
    path, _ = ctx.compiled.locate(dotted)
    return None if path is None or path.startswith("override") else near
