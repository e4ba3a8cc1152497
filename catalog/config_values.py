"""What planning reads from a step config, and the sentinels for values it cannot use.

The planner and `compose` read a compiled config through the caller's `ReadConfig`
(`runners.config.values.read_config`, the engine `run` uses), so a plan and a run never
disagree, and catalog never imports runners.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from catalog.discovery import StepEntry


def dotted_get(config: Any, dotted: str, default: Any = None) -> Any:
    """`a.b.c` in a resolved config (plain dicts); `default` when any part is absent."""
    node = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


MISSING: Any = _Sentinel("MISSING")  # absent, null or ??? (must be supplied)
INTERPOLATED: Any = _Sentinel("INTERPOLATED")  # set, but only known at run time (${...})


class ConfigValues(Protocol):
    """One compiled config (file + overrides), read without resolving interpolations."""

    def get(self, dotted: str) -> Any:
        """The plain value, `MISSING` or `INTERPOLATED`; inside a list, the first entry that
        has the key is read (`data.train.data_path` with several train datasets)."""

    def set_by(self, dotted: str) -> str | None:
        """The override token that sets `dotted` or a section holding it, if any."""


class ReadConfig(Protocol):
    """Compile a step's config with overrides, as `run` compiles it for `entry` (its step:
    its config folder, its kind) when given."""

    def __call__(
        self, path: Path, overrides: Sequence[str], entry: StepEntry | None = None
    ) -> ConfigValues: ...


def as_int(value: Any) -> int | None:
    """An integer the way pydantic's lax mode reads one ("8" -> 8), else None."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None
