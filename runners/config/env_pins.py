"""Pin `${oc.env:VAR,default}` into the config: what runs is what preflight checked.

Kept, `${oc.env:STEPS_OUTPUT,/tmp/out}/dpo` resolves again wherever the job starts (another
environment writes elsewhere), so each plain env interpolation is replaced by its value in the
launching environment (defaults parsed by OmegaConf's grammar) and the values are returned for
run.json. A secret variable or credential-shaped value, an unset variable without a default and
a default that refers to other keys stay references.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from runners.omegaconf_internals import (
    child_node,
    is_opaque,
    raw_value,
    register_resolver,
)
from runners.secrets import is_secret_env, looks_like_secret, secret_values

OPEN = "${oc.env:"
HOME_VAR = "STEPS_HOME"
_RESOLVER = "steps_pinned_env"
_UNSET = object()
# The launch environment the resolver reads while `pin_env` runs, and what it last used.
_ENV: dict[str, Any] = {"values": {}, "secrets": {}, "source": None}


def _lookup(key: str, default: Any = _UNSET) -> str | None:
    """`oc.env` (omegaconf 2.3) against the launch environment, noting where the value came from."""
    values = _ENV["values"]
    if key in values:
        _ENV["source"] = "environment"
        return values[key]
    if default is _UNSET:
        raise KeyError(key)
    _ENV["source"] = "default"
    return None if default is None else str(default)


def _register() -> None:
    if not OmegaConf.has_resolver(_RESOLVER):
        register_resolver(_RESOLVER, _lookup)


def _end(text: str, start: int) -> int | None:
    """Index just past the `}` closing the interpolation that opens at `start`."""
    depth = 0
    i = start
    while i < len(text):
        if text.startswith("${", i):
            depth += 1
            i += 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _evaluate(piece: str) -> tuple[str, str, str | None] | None:
    """(variable, source, value) of one `${oc.env:...}`, or None when it stays a reference."""
    inner = piece[len(OPEN) : -1]
    var = inner.split(",", 1)[0].strip()
    if not var or is_secret_env(var) or "${" in inner:
        return None
    try:
        value = OmegaConf.create({"v": "${" + _RESOLVER + ":" + inner + "}"}).v
    except (OmegaConfBaseException, KeyError, ValueError):
        return None
    if value is not None and (looks_like_secret(value) or value in _ENV["secrets"]):
        return None
    return var, _ENV["source"], value


def _pin_text(raw: str, used: dict[str, dict]) -> Any:
    out, i = [], 0
    while True:
        start = raw.find(OPEN, i)
        end = _end(raw, start) if start >= 0 else None
        if start < 0 or end is None:
            out.append(raw[i:])
            break
        out.append(raw[i:start])
        found = _evaluate(raw[start:end])
        if found is None or (found[2] is None and raw != raw[start:end]):
            out.append(raw[start:end])
        else:
            var, source, value = found
            used[var] = {"value": value, "source": source}
            if raw == raw[start:end] and value is None:
                return None
            out.append(value.replace("${", "\\${"))  # a value is never read as a reference
        i = end
    return "".join(out)


def pin_env(cfg: DictConfig, env: Mapping[str, str]) -> dict[str, dict]:
    """Replace plain `${oc.env:...}` in `cfg` by their values in `env`; returns
    `{VAR: {"value": ..., "source": "environment" | "default"}}` for run.json."""
    _register()
    _ENV["values"] = dict(env)
    _ENV["secrets"] = secret_values(env)
    used: dict[str, dict] = {}

    def walk(node: Any) -> None:
        keys = node.keys() if isinstance(node, DictConfig) else range(len(node))
        for k in list(keys):
            child = child_node(node, k)
            if isinstance(child, (DictConfig, ListConfig)):
                if not is_opaque(child):
                    walk(child)
                continue
            raw = raw_value(child)
            if isinstance(raw, str) and OPEN in raw:
                new = _pin_text(raw, used)
                if new != raw:
                    node[k] = new

    try:
        walk(cfg)
    finally:
        _ENV["values"], _ENV["secrets"] = {}, {}
    return used


def with_steps_home(env: MutableMapping[str, str]) -> str:
    """Set `STEPS_HOME` (the folder holding the built-in `steps/` catalog) in `env` and this
    process unless set; returns it. Shipped configs name their data from it, since NeMo-RL opens
    relative paths from its checkout root (`pin_env` writes the value into config.yaml)."""
    from catalog.discovery import BUILTIN_ROOT

    home = env.get(HOME_VAR) or os.environ.get(HOME_VAR) or str(BUILTIN_ROOT.parent)
    env.setdefault(HOME_VAR, home)
    os.environ.setdefault(HOME_VAR, home)
    return home
