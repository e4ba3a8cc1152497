"""A key of the user's config within an edit or two of a declared key is a typo, not a knob.

NeMo-RL keeps keys no TypedDict declares, so `grpo.max_num_stesp: 100` runs with the default
number of steps and nothing says so. A key that far from every declared key may be a deliberate
extra (W-SCHEMA-UNKNOWN, a warning); one within an edit or two of exactly one declared key, set in
a config file, is E-SCHEMA-TYPO with the key it is near. A key kept on purpose is listed in the
config's own `run.keep_keys` (steps' section, stripped before NeMo-RL runs), which silences both.
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
