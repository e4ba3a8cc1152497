"""Config files read as `OmegaConf.load` reads them, faster, and kept for reuse.

libyaml does the parsing under OmegaConf's own loader rules (its float syntax, no timestamps,
duplicate keys rejected), so the data is the same. A process that reads the same content
again (check, plan, the tests) gets a copy instead of a rebuild; a one-shot command copies
nothing, because a pristine copy is kept only when a content comes back a second time. Both
caches are `catalog.content_memo.ContentMemo`s, bounded in entries and bytes.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

from catalog.content_memo import SHARED, ContentMemo
from catalog.yamlfile import parse, read_capped
from runners.config.node_copy import NotPlain, copy_config
from runners.config.plain_merge import parses

# Configs: a pristine copy kept once a file's content comes a second time, copied per hit.
_FILES = ContentMemo(max_entries=128, copy=copy_config, seen_twice=True)
# Plain data: kept on first sight and handed out as it is (its callers only read it).
_DATA = ContentMemo(max_entries=256, copy=SHARED)


def load_yaml_file(path: Path) -> DictConfig | ListConfig:
    """`OmegaConf.load(path)`; raises what it raises (OSError, yaml.YAMLError, decode errors),
    except that a top-level scalar comes back as an empty list for the caller to reject, and
    that the read and the aliases are bounded (`catalog.yamlfile.read_capped`, `check_tree`)."""
    content = read_capped(path)
    return _FILES.get(content, lambda: _build(content), size=len(content))


def _build(content: bytes) -> DictConfig | ListConfig:
    _, data = parse(content.decode("utf-8"), _omegaconf_loader())
    if data is None:
        return OmegaConf.create()
    return OmegaConf.create(data if isinstance(data, (dict, list)) else [])


def load_yaml_data(path: Path) -> Any:
    """What `load_yaml_file` would build from, as plain data: a mapping, else a list (an empty
    one for a top-level scalar), read-only for the caller (kept for reuse as it is). Raises
    what `load_yaml_file` raises, and NotPlain for data `build_config` does not take or that
    `OmegaConf.create` would refuse (an interpolation that does not parse)."""
    content = read_capped(path)
    data = _DATA.get(content, lambda: _plain_data(content), size=len(content))
    if data is NotPlain:
        raise NotPlain
    return data


def _plain_data(content: bytes) -> Any:
    _, data = parse(content.decode("utf-8"), _omegaconf_loader())
    data = {} if data is None else data if isinstance(data, (dict, list)) else []
    return data if _plain(data) else NotPlain


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
