"""Config files read as `OmegaConf.load` reads them (libyaml under its loader's rules), and a
content read a second time in a process a copy instead of a rebuild (`ContentMemo`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from catalog.content_memo import SHARED, ContentMemo
from catalog.yamlfile import keep_tree, parse, read_capped
from runners.config.plain_merge import NotPlain
from runners.omegaconf_internals import yaml_loader

# Configs: kept (pickled) once a file's content comes a second time, unpickled per hit: a
# fresh copy ~6x cheaper than `copy.deepcopy` of a DictConfig.
_FILES = ContentMemo(max_entries=128, seen_twice=True)
# Plain data: kept on first sight and handed out as it is (its callers only read it).
_DATA = ContentMemo(max_entries=256, copy=SHARED)


def load_yaml_file(path: Path) -> DictConfig | ListConfig:
    """`OmegaConf.load(path)`, raising what it raises, but the read and aliases bounded
    (`catalog.yamlfile`) and a top-level scalar an empty list for the caller to reject."""
    content = read_capped(path)
    return _FILES.get(content, lambda: _build(content), size=len(content))


def _build(content: bytes) -> DictConfig | ListConfig:
    _, data = parse(content.decode("utf-8"), yaml_loader())
    if data is None:
        return OmegaConf.create()
    return OmegaConf.create(data if isinstance(data, (dict, list)) else [])


def load_yaml_data(path: Path) -> Any:
    """What `load_yaml_file` builds from, as plain data, read-only; NotPlain if not plain."""
    content = read_capped(path)
    data = _DATA.get(content, lambda: _plain_data(content), size=len(content))
    if data is NotPlain:
        raise NotPlain
    return data


def _plain_data(content: bytes) -> Any:
    node, data = parse(content.decode("utf-8"), yaml_loader())
    keep_tree(content, node)  # findings' file:line read this tree, not a second parse
    data = {} if data is None else data if isinstance(data, (dict, list)) else []
    return data if _plain(data) else NotPlain


def _plain(value: Any) -> bool:
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    return kind in (str, int, float, bool, type(None))
