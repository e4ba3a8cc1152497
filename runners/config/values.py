"""The planner's view of a compiled config: `catalog.config_values.ConfigValues` over
`runners.config.compiler.compile_config`, the engine `run` uses (its cache makes repeated reads
cheap)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from catalog.config_values import INTERPOLATED, MISSING
from runners.config.compiler import CompiledConfig, compile_config
from runners.config.overrides import setting_override
from runners.omegaconf_internals import (
    child_node,
    is_interpolation,
    is_missing,
    is_none,
    raw_value,
)


class CompiledValues:
    """Plain values of a `CompiledConfig`; interpolations stay unresolved (`INTERPOLATED`)."""

    def __init__(self, compiled: CompiledConfig) -> None:
        self.compiled = compiled

    def get(self, dotted: str) -> Any:
        node: Any = self.compiled.config
        for part in dotted.split("."):
            if is_missing(node) or is_none(node):
                return MISSING
            if is_interpolation(node):
                return INTERPOLATED
            if isinstance(node, ListConfig):
                node = next(
                    (
                        n
                        for n in (child_node(node, i) for i in range(len(node)))
                        if isinstance(n, DictConfig) and child_node(n, part) is not None
                    ),
                    None,
                )
            if not isinstance(node, DictConfig) or child_node(node, part) is None:
                return MISSING
            node = child_node(node, part)
        if is_missing(node) or is_none(node):
            return MISSING
        if is_interpolation(node):
            return INTERPOLATED
        if isinstance(node, (DictConfig, ListConfig)):
            return OmegaConf.to_container(node, resolve=False)
        return raw_value(node)

    def set_by(self, dotted: str) -> str | None:
        return setting_override(self.compiled.overrides, dotted)


def read_config(path: Path, overrides: Sequence[str] = (), entry: Any = None) -> CompiledValues:
    """Compile `path` with `overrides` for planning, as `run` would (`entry`: its config folder)."""
    home = entry.config_dir if entry is not None else None
    return CompiledValues(compile_config(path, list(overrides), home))


def resolved_value(cfg: DictConfig, key: str) -> Any:
    """The value at `key` with its interpolations resolved; None when absent or unresolvable."""
    try:
        value = OmegaConf.select(cfg, key, throw_on_missing=False)
    except Exception:  # an unresolvable interpolation: preflight reports it with its location
        return None
    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True)
    return value
