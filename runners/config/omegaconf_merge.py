"""Merging a `defaults:` chain by OmegaConf, as NeMo-RL's loader does, and the finding for
values whose shapes cannot be merged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from catalog.errors import StepsError
from catalog.yamlfile import file_key
from runners.omegaconf_internals import child_node, is_interpolation


def merge_with_override(base: DictConfig, child: DictConfig) -> DictConfig:
    """Upstream `merge_with_override`: only top-level `_override_: true` replaces a section.
    Both configs are fresh and used only here, so `unsafe_merge` (no copies) gives the same."""
    for key in list(child.keys()):
        node = child_node(child, key)  # no interpolation resolution while merging
        if (
            isinstance(node, DictConfig)
            and not is_interpolation(node)
            and node.get("_override_", False)
        ):
            node.pop("_override_")
            if key in base:
                base.pop(key)
    if len(base) == 0:  # merging into nothing would only copy the child
        return child
    return OmegaConf.unsafe_merge(base, child)  # type: ignore[return-value]


def merged(merge: Any, base: Any, child: Any, path: Path) -> Any:
    """`merge(base, child)`; a value whose shape cannot go over its parent's (a mapping over a
    list, a list over a mapping: OmegaConf's ConfigTypeError, a bare TypeError from 2.4, which
    stops NeMo-RL's loader too) is E-CONFIG-MERGE at `child`'s key in `path`."""
    try:
        return merge(base, child)
    except (OmegaConfBaseException, TypeError) as exc:
        keys, what = _shape_clash(base, child) or ([], str(exc).strip().splitlines()[0])
        raise StepsError(
            "E-CONFIG-MERGE",
            f"`{'.'.join(keys) or '(top level)'}` cannot be merged over its parent's value: {what}",
            path=str(path),
            key=".".join(keys) or None,
            line=file_key(path, keys)[0] if keys else None,
            fix="give the key the parent's shape (a mapping or a list), or replace the whole "
            "top-level section with `_override_: true` in it",
            exit_code=2,
        ) from None


_MAPPING, _NODE = (dict, DictConfig), (dict, DictConfig, list, ListConfig)


def _shape_clash(base: Any, child: Any) -> tuple[list[str], str] | None:
    """The first key path where a mapping in one meets a list in the other, and which."""
    for key in child:
        if key not in base:
            continue
        old, new = base[key], child[key]
        if not (isinstance(old, _NODE) and isinstance(new, _NODE)):
            continue
        if isinstance(old, _MAPPING) != isinstance(new, _MAPPING):
            over = "a mapping over a list" if isinstance(new, _MAPPING) else "a list over a mapping"
            return [str(key)], over
        deeper = _shape_clash(old, new) if isinstance(old, _MAPPING) else None
        if deeper is not None:
            return [str(key), *deeper[0]], deeper[1]
    return None
