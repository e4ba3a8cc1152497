"""Merging a `defaults:` chain by OmegaConf, as NeMo-RL's loader does (the path `plain_merge`
leaves to it), and the finding for values whose shapes cannot be merged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from catalog.errors import StepsError
from catalog.yamlfile import file_key


def merge_with_override(base: DictConfig, child: DictConfig) -> DictConfig:
    """Upstream `merge_with_override`: only top-level `_override_: true` replaces a section.

    Both configs are fresh loads that only this merge uses, so OmegaConf's `unsafe_merge`
    (the same merge without copying its inputs first) gives upstream's result faster.
    """
    for key in list(child.keys()):
        node = child._get_node(key)  # no interpolation resolution while merging
        if (
            isinstance(node, DictConfig)
            and not node._is_interpolation()
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
    list, a list over a mapping: OmegaConf's ConfigTypeError, which stops NeMo-RL's loader too)
    is E-CONFIG-MERGE at `child`'s key in `path`."""
    try:
        return merge(base, child)
    except OmegaConfBaseException as exc:
        keys = _shape_clash(base, child) or []
        raise StepsError(
            "E-CONFIG-MERGE",
            f"`{'.'.join(keys) or '(top level)'}` cannot be merged over its parent's value: "
            f"{str(exc).splitlines()[0]}",
            path=str(path),
            key=".".join(keys) or None,
            line=file_key(path, keys)[0] if keys else None,
            fix="give the key the parent's shape (a mapping or a list), or replace the whole "
            "top-level section with `_override_: true` in it",
            exit_code=2,
        ) from None


_MAPPING, _NODE = (dict, DictConfig), (dict, DictConfig, list, ListConfig)


def _shape_clash(base: Any, child: Any) -> list[str] | None:
    """The first key path where a mapping in one meets a list in the other."""
    for key in child:
        if key not in base:
            continue
        old, new = base[key], child[key]
        if not (isinstance(old, _NODE) and isinstance(new, _NODE)):
            continue
        if isinstance(old, _MAPPING) != isinstance(new, _MAPPING):
            return [str(key)]
        deeper = _shape_clash(old, new) if isinstance(old, _MAPPING) else None
        if deeper is not None:
            return [str(key), *deeper]
    return None
