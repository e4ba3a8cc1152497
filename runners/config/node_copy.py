"""`copy.deepcopy` of an OmegaConf config, an order of magnitude faster.

Configs kept for reuse (`files`, the compiler's chains: `ContentMemo`s) are handed out as copies,
and `copy.deepcopy` of a NeMo-RL-sized DictConfig costs ~10 ms: generic copying of every
node's metadata dataclass. This builds the same objects OmegaConf's own `__deepcopy__`
methods build (same classes, same `__dict__` entries: metadata copied, values shared,
parents re-pointed, value nodes' flag caches cleared), for the node kinds a YAML file gives.
Anything else (structured configs, enum or path nodes, typed metadata, cached resolver
results) goes through `copy.deepcopy` itself, so the result is always deepcopy's.
"""

from __future__ import annotations

import copy
import functools
from collections import defaultdict
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.base import Node
from omegaconf.nodes import AnyNode, BooleanNode, FloatNode, IntegerNode, StringNode

_VALUE_NODES = (AnyNode, StringNode, IntegerNode, FloatNode, BooleanNode)
_VALUE_KEYS = frozenset({"_metadata", "_parent", "_flags_cache", "_val"})
_CONTAINER_KEYS = frozenset({"_metadata", "_parent", "_flags_cache", "_content"})
_ATOMIC = (type(None), bool, int, float, str)  # what deepcopy returns as is (and classes)
_FLAG_VALUES = (True, False, None)


def copy_config(cfg: Any) -> Any:
    """`copy.deepcopy(cfg)` for a config (any other value is deep-copied as usual)."""
    if isinstance(cfg, (DictConfig, ListConfig)):
        return _copy_node(cfg, cfg.__dict__["_parent"])
    return copy.deepcopy(cfg)


def _copy_node(node: Node, parent: Any) -> Node:
    cls = type(node)
    src = node.__dict__
    meta = _copy_metadata(src["_metadata"])
    if cls in _VALUE_NODES and src.keys() == _VALUE_KEYS and meta is not None:
        res = object.__new__(cls)
        res.__dict__.update(_metadata=meta, _parent=parent, _flags_cache=None, _val=src["_val"])
        return res
    if cls in (DictConfig, ListConfig) and src.keys() == _CONTAINER_KEYS and meta is not None:
        cache = src["_flags_cache"]
        if cache is None or all(v in _FLAG_VALUES for v in cache.values()):
            res = object.__new__(cls)
            d = res.__dict__
            d.update(_metadata=meta, _flags_cache=None if cache is None else dict(cache))
            content = src["_content"]
            if isinstance(content, dict):
                content = {k: _copy_node(v, res) for k, v in content.items()}
            elif isinstance(content, list):
                content = [_copy_node(v, res) for v in content]
            d.update(_content=content, _parent=parent)
            return res
    return _deepcopy_child(node, parent)


def _deepcopy_child(node: Node, parent: Any) -> Node:
    """OmegaConf's own deepcopy of one node, detached from its parent as its container's
    `__deepcopy__` detaches it, then attached to the copy's container."""
    old = node.__dict__["_parent"]
    try:
        node.__dict__["_parent"] = None
        res = copy.deepcopy(node)
    finally:
        node.__dict__["_parent"] = old
    res.__dict__["_parent"] = parent
    return res


def _copy_metadata(meta: Any) -> Any:
    """A copy of node metadata whose fields deepcopy would return as they are (types, keys,
    flags), else None."""
    fields = meta.__dict__
    for name, value in fields.items():
        if name in ("flags", "resolver_cache"):
            continue
        if not (type(value) in _ATOMIC or isinstance(value, type) or value is Any):
            return None
    flags = fields.get("flags")
    if type(flags) is not dict or not all(v in _FLAG_VALUES for v in flags.values()):
        return None
    cache = fields.get("resolver_cache")
    if type(cache) is not defaultdict or cache.default_factory is not dict or cache:
        return None
    res = object.__new__(type(meta))
    res.__dict__.update(fields)
    res.__dict__["flags"] = dict(flags)
    res.__dict__["resolver_cache"] = defaultdict(dict)
    return res


class NotPlain(Exception):
    """The data holds something only OmegaConf itself should decide on (a caller falls back)."""


_PLAIN_SCALARS = (str, int, float, bool, type(None))
_PROBES = {DictConfig: "d", ListConfig: "l", AnyNode: "v"}


def build_config(data: dict) -> DictConfig:
    """`OmegaConf.create(data)` for data as YAML gives it (str keys; dicts, lists, str, int,
    float, bool, None): the same nodes, without re-validating every value. Raises NotPlain
    for anything else."""
    if type(data) is not dict or _templates() is None:
        raise NotPlain
    return _build(data, None, None)


@functools.cache
def _templates() -> dict[type, Any] | None:
    """The metadata `OmegaConf.create` gives a mapping, a list and a value, as it gives it;
    None if a field is more than deepcopy returns as is (then nothing is built here)."""
    probe = OmegaConf.create({"d": {}, "l": [], "v": 0})
    found = {cls: probe._get_node(k)._metadata for cls, k in _PROBES.items()}
    return found if all(_copy_metadata(m) is not None for m in found.values()) else None


def _meta(cls: type, key: Any) -> Any:
    """A copy of the template (plain fields; flags and resolver cache empty, as created)."""
    template = _templates()[cls]  # type: ignore[index]
    res = object.__new__(type(template))
    res.__dict__.update(template.__dict__, flags={}, resolver_cache=defaultdict(dict), key=key)
    return res


def _build(value: Any, key: Any, parent: Any) -> Node:
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        res = object.__new__(AnyNode)
        res.__dict__.update(_metadata=_meta(AnyNode, key), _parent=parent, _flags_cache=None)
        res.__dict__["_val"] = value
        return res
    if kind is dict:
        res = object.__new__(DictConfig)
        content: Any = {}
        for k, v in value.items():
            if type(k) is not str:
                raise NotPlain
            content[k] = _build(v, k, res)
    elif kind is list:
        res = object.__new__(ListConfig)
        content = [_build(v, i, res) for i, v in enumerate(value)]
    else:
        raise NotPlain
    res.__dict__.update(_metadata=_meta(type(res), key), _flags_cache=None)
    res.__dict__.update(_content=content, _parent=parent)
    return res
