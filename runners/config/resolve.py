"""`OmegaConf.to_container(cfg, resolve=True)` with the plain node interpolations done here.

OmegaConf parses every interpolation with its ANTLR grammar each time it resolves it: most of
the cost of resolving a NeMo-RL config. The common kind, a whole value `${a.b.c}` naming a key
by an absolute path of plain names, is a lookup: this follows it in the unresolved container
(chains, sections copied fresh per use). Every other interpolation (resolvers, text around it,
relative or indexed paths) is resolved by OmegaConf itself, node by node; and on anything that
would fail or that plain data cannot settle (a missing value, a cycle, a reference to a parent,
a typed node), the whole config goes to OmegaConf, so its result or its error is the answer.
"""

from __future__ import annotations

import re
from typing import Any

from omegaconf import Container, DictConfig, ListConfig, OmegaConf
from omegaconf.nodes import AnyNode

_NODE_PATH = re.compile(r"\$\{([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\}")


class _Unsure(Exception):
    """OmegaConf must decide (an error, or a case not followed here)."""


def resolved_container(cfg: DictConfig) -> Any:
    """What `OmegaConf.to_container(cfg, resolve=True)` returns (or raises)."""
    raw = OmegaConf.to_container(cfg, resolve=False)
    try:
        return _Resolver(cfg, raw).value(raw, ())
    except _Unsure:
        return OmegaConf.to_container(cfg, resolve=True)


class _Resolver:
    def __init__(self, cfg: DictConfig, raw: Any) -> None:
        self.cfg = cfg
        self.raw = raw
        self.active: set[tuple] = set()

    def value(self, value: Any, path: tuple) -> Any:
        if type(value) is dict:
            return {k: self.value(v, (*path, k)) for k, v in value.items()}
        if type(value) is list:
            return [self.value(v, (*path, i)) for i, v in enumerate(value)]
        if type(value) is str and "${" in value:
            return self.interpolation(value, path)
        return value

    def interpolation(self, text: str, path: tuple) -> Any:
        node = self.node(path)
        if type(node) is not AnyNode:
            raise _Unsure
        match = _NODE_PATH.fullmatch(text)
        if match is None:
            return _by_omegaconf(node)
        target = tuple(match.group(1).split("."))
        if path[: len(target)] == target or target in self.active:
            raise _Unsure  # a reference to itself or a parent, or a cycle: OmegaConf's error
        found: Any = self.raw
        for key in target:
            if type(found) is not dict or key not in found:
                raise _Unsure
            found = found[key]
        if found == "???" and type(found) is str:
            raise _Unsure
        self.active.add(target)
        try:
            return self.value(found, target)
        finally:
            self.active.discard(target)

    def node(self, path: tuple) -> Any:
        node: Any = self.cfg
        for key in path:
            if not isinstance(node, (DictConfig, ListConfig)):
                raise _Unsure
            node = node._get_node(key)
        return node


def _by_omegaconf(node: AnyNode) -> Any:
    """One interpolation resolved as `to_container` resolves it; any failure: _Unsure."""
    try:
        target = node._dereference_node()
        if isinstance(target, Container):
            return OmegaConf.to_container(target, resolve=True)
        return target._value()
    except Exception:
        raise _Unsure from None
