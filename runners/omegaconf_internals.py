"""Everything we use of OmegaConf beyond its public API, for each supported version (2.2-2.4;
`tests/test_omegaconf_versions.py` runs them under each): its YAML loader (moved from
`omegaconf._utils` to `omegaconf._yaml` in 2.4), a child as an unresolved node (`_get_node`)
with its predicates, `register_resolver` (2.4 deprecates `register_new_resolver`), and each
interpolation string parsed once a process (`parse_interpolations_once`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omegaconf import Container, Node

# The OmegaConf releases whose internals this module knows: a staged job refuses another
# (`runners.launch.job_code`), so this module imports nothing at module level.
SUPPORTED = ((2, 2), (2, 5))  # from 2.2 up to, not including, 2.5


@functools.cache
def yaml_loader() -> Any:
    """OmegaConf's YAML loader class on libyaml's parser when PyYAML has it (2.4's own loader
    already is; 2.2/2.3's is PyYAML's pure-Python parser, ~10x slower on a NeMo-RL config)."""
    import yaml

    try:
        from omegaconf._yaml import get_yaml_loader  # 2.4
    except ImportError:
        from omegaconf._utils import get_yaml_loader  # 2.2, 2.3

    base = get_yaml_loader()
    if not yaml.__with_libyaml__ or issubclass(base, yaml.cyaml.CParser):
        return base
    from yaml.cyaml import CParser

    class Loader(CParser, base):  # type: ignore[misc, valid-type]
        def __init__(self, stream: Any) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    return Loader


def child_node(container: Container, key: Any) -> Any:
    """The node at `key` as written (`???` and `${...}` unresolved), None when absent: `in`
    misses a `???` and `cfg[key]` resolves an interpolation or raises on `???`."""
    return container._get_node(key)


def is_missing(node: Node) -> bool:
    """The node's value is `???`."""
    return node._is_missing()


def is_none(node: Node) -> bool:
    return node._is_none()


def is_interpolation(node: Node) -> bool:
    """The node's value is a `${...}` string, unresolved."""
    return node._is_interpolation()


def raw_value(node: Node) -> Any:
    """A value node's value as written (an interpolation as its text)."""
    return node._value()


def is_opaque(node: Node) -> bool:
    """A node whose value says nothing about its contents yet: None, `???` or `${...}`."""
    return node._is_none() or node._is_missing() or node._is_interpolation()


def register_resolver(name: str, fn: Any) -> None:
    """`OmegaConf.register_resolver` from 2.4, `register_new_resolver` before (where
    `register_resolver` is the old string-only API): the same call, without 2.4's warning."""
    from omegaconf import OmegaConf

    if version() >= (2, 4):
        OmegaConf.register_resolver(name, fn)
    else:
        OmegaConf.register_new_resolver(name, fn)


def version() -> tuple[int, ...]:
    """The running OmegaConf's (major, minor)."""
    import omegaconf

    return tuple(int(part) for part in omegaconf.__version__.split(".")[:2])


# An interpolation longer than this is parsed each time, not kept (bounds the memo's memory).
_KEPT_TEXT = 2048


@functools.cache
def parse_interpolations_once() -> None:
    """Keep OmegaConf's ANTLR parse of each interpolation string (~0.3 ms, at every node made and
    every resolution: the upstream corpus parsed 34 strings 27k times, a third of a compile). The
    parse depends on its arguments alone and OmegaConf only reads the tree, so a kept one is
    what a fresh parse gives. Installed in every OmegaConf module that imported `parse`."""
    import sys

    from omegaconf import grammar_parser

    original = grammar_parser.parse
    kept = functools.lru_cache(maxsize=1024)(original)

    @functools.wraps(original)
    def parse(value: Any, parser_rule: str = "configValue", lexer_mode: str = "DEFAULT_MODE"):
        if type(value) is not str or len(value) > _KEPT_TEXT:
            return original(value, parser_rule, lexer_mode)
        return kept(value, parser_rule, lexer_mode)

    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] == "omegaconf" and getattr(module, "parse", None) is original:
            module.parse = parse  # type: ignore[attr-defined]
