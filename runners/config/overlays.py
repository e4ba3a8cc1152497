"""Version overlays: config keys only newer NeMo-RL versions read, added where they apply.

A step config must be valid on every supported NeMo-RL, so keys only newer versions declare live
in `overlays/<config name>.yaml` beside the config. Each is added before the overrides where the
config does not set it, its parent exists and the NeMo-RL that will run knows it (its schema);
a mapping only whole (every key its class requires), so no half section is ever left.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from catalog.schema_paths import complete, type_at
from runners.config.compiler import CompiledConfig, apply_overrides, load_config
from runners.omegaconf_internals import child_node

OVERLAY_DIR = "overlays"


def overlay_candidates(sources: list[Path]) -> list[Path]:
    """Where the overlays of a config's chain would be, parents first."""
    return [src.parent / OVERLAY_DIR / src.name for src in sources]


def overlay_files(sources: list[Path]) -> list[Path]:
    """The overlays of a config's chain, parents first."""
    return [p for p in overlay_candidates(sources) if p.is_file()]


def _load(path: Path) -> dict:
    """An overlay through the one config loader (its YAML errors, its `defaults:`)."""
    raw = OmegaConf.to_container(load_config(path).config, resolve=False)
    return raw if isinstance(raw, dict) else {}


def _fill(node: DictConfig, overlay: dict, prefix: str, doc: dict, added: list[str]) -> None:
    for key, value in overlay.items():
        dotted = f"{prefix}{key}"
        child = child_node(node, key)  # `in` misses a `???` the config sets
        if child is not None:
            if isinstance(child, DictConfig) and isinstance(value, dict):
                _fill(child, value, f"{dotted}.", doc, added)
            continue
        t = type_at(doc, dotted)
        if t is None or (isinstance(value, dict) and not complete(doc, t, value)):
            continue
        node[key] = value
        added.append(dotted)


def apply_overlays(compiled: CompiledConfig, doc: dict | None) -> list[str]:
    """Add the overlay keys the schema `doc` knows (their files first in sources); those added."""
    if doc is None:
        return []
    added: list[str] = []
    files = overlay_files(compiled.sources)
    for path in reversed(files):  # the child's overlay first: its values win
        _fill(compiled.config, _load(path), "", doc, added)
    if added:
        compiled.sources[:0] = files
    return added


def compile_with_overlays(
    path: str | Path, overrides: list[str], doc: dict | None, home: Path | None = None
) -> tuple[CompiledConfig, list[str]]:
    """`compile_config` with the overlays for the schema `doc` applied before the overrides."""
    compiled = load_config(path, home)
    added = apply_overlays(compiled, doc)
    apply_overrides(compiled.config, list(overrides))
    compiled.overrides = list(overrides)
    return compiled, added
