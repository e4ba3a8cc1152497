"""Config files read as `OmegaConf.load` reads them, faster, and kept for reuse.

libyaml does the parsing under OmegaConf's own loader rules (its float syntax, no timestamps,
duplicate keys rejected), so the data is the same. A process that reads the same content
again (check, plan, the tests) gets a copy instead of a rebuild; a one-shot command copies
nothing, because a pristine copy is kept only when a key comes back a second time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

from catalog.yamlfile import parse, read_capped
from runners.config.node_copy import NotPlain, copy_config
from runners.config.plain_merge import parses


class ReuseCache:
    """Pristine copies of values asked for more than once (callers copy what they get, with
    the same `copy`: `node_copy.copy_config`, deepcopy's result, unless told otherwise)."""

    def __init__(self, size: int = 128, copy: Callable[[Any], Any] = copy_config) -> None:
        self.size = size
        self.copy = copy
        self._seen: set[Any] = set()
        self._kept: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        return self._kept.get(key)

    def offer(self, key: Any, value: Any) -> None:
        """Keep a copy of `value` if `key` was offered before (a changed value replaces it)."""
        if key not in self._seen:
            if len(self._seen) >= 8 * self.size:
                self._seen.clear()
            self._seen.add(key)
            return
        if len(self._kept) >= self.size:
            self._kept.clear()
        self._kept[key] = self.copy(value)


_FILES = ReuseCache()


def load_yaml_file(path: Path) -> DictConfig | ListConfig:
    """`OmegaConf.load(path)`; raises what it raises (OSError, yaml.YAMLError, decode errors),
    except that a top-level scalar comes back as an empty list for the caller to reject, and
    that the read and the aliases are bounded (`catalog.yamlfile.read_capped`, `check_tree`)."""
    content = read_capped(path)
    kept = _FILES.get(content)
    if kept is not None:
        return _FILES.copy(kept)
    _, data = parse(content.decode("utf-8"), _omegaconf_loader())
    cfg = (
        OmegaConf.create()
        if data is None
        else OmegaConf.create(data if isinstance(data, (dict, list)) else [])
    )
    _FILES.offer(content, cfg)
    return cfg


_DATA: dict[bytes, Any] = {}


def load_yaml_data(path: Path) -> Any:
    """What `load_yaml_file` would build from, as plain data: a mapping, else a list (an empty
    one for a top-level scalar), read-only for the caller (kept for reuse as it is). Raises
    what `load_yaml_file` raises, and NotPlain for data `build_config` does not take or that
    `OmegaConf.create` would refuse (an interpolation that does not parse)."""
    content = read_capped(path)
    data = _DATA.get(content)
    if data is None:
        _, data = parse(content.decode("utf-8"), _omegaconf_loader())
        data = {} if data is None else data if isinstance(data, (dict, list)) else []
        if not _plain(data):
            data = NotPlain
        if len(_DATA) >= 256:
            _DATA.clear()
        _DATA[content] = data
    if data is NotPlain:
        raise NotPlain
    return data


def _plain(value: Any) -> bool:
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    if kind is str:
        return "${" not in value or parses(value)
    return kind in (int, float, bool, type(None))


@functools.cache
def _omegaconf_loader() -> Any:
    """OmegaConf's loader class on libyaml's parser when PyYAML has it."""
    from omegaconf._utils import get_yaml_loader

    base = get_yaml_loader()
    if not yaml.__with_libyaml__:
        return base
    from yaml.cyaml import CParser

    class Loader(CParser, base):  # type: ignore[misc, valid-type]
        def __init__(self, stream: Any) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    return Loader
