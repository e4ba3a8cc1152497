"""Read a few keys of a step config without compiling it, so planning stays fast.

Planning needs only a handful of plain values (is a port's path already set? which subtype does
`output_type` name?). Compiling with OmegaConf costs ~50 ms a stage; this reads the same YAML
files with the same `defaults:` rules (child last, lists replace, top-level `_override_`, `???`
in a child keeps the parent) and applies simple `key=value` overrides. Interpolated values come
back as `INTERPOLATED`. `pipeline run` compiles for real (runners.config) before anything runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from catalog.errors import StepsError
from catalog.yamlerror import yaml_error

MISSING = object()
INTERPOLATED = object()
_CACHE: dict[tuple[str, int], dict] = {}


def _yaml_load(path: Path) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns)
        if key not in _CACHE:
            _CACHE[key] = yaml.load(path.read_text(encoding="utf-8"), Loader=loader) or {}
        return _CACHE[key]
    except OSError as exc:
        raise StepsError(
            "E-CONFIG-FILE",
            f"cannot read config: {exc.strerror}",
            path=str(path),
            fix="name an existing config (see `python -m steps show STEP`)",
        ) from None
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path, "E-CONFIG-YAML") from None


def _merge(base: dict, child: dict) -> dict:
    out = dict(base)
    for k, v in child.items():
        if v == "???" and k in out:
            continue
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _load(path: Path, chain: tuple[Path, ...]) -> dict:
    if path in chain:
        raise StepsError(
            "E-CONFIG-DEFAULTS",
            "defaults form a cycle",
            path=str(path),
            fix="remove the `defaults:` entry that leads back to this file",
        )
    data = _yaml_load(path)
    if not isinstance(data, dict):
        return {}
    data = dict(data)
    parents = data.pop("defaults", None)
    parents = [parents] if isinstance(parents, str) else parents or []
    merged: dict = {}
    for p in parents:
        if isinstance(p, str):
            merged = _merge(merged, _load((path.parent / p).resolve(), (*chain, path)))
    for k, v in data.items():
        if isinstance(v, dict) and v.get("_override_") is True:
            data[k] = {kk: vv for kk, vv in v.items() if kk != "_override_"}
            merged.pop(k, None)
    return _merge(merged, data)


def _parse_value(text: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return text


class ConfigPeek:
    """The merged YAML of one config plus overrides, for reading plain values."""

    def __init__(self, path: str | Path, overrides: list[str] = ()) -> None:
        self.path = Path(path)
        self.data = _load(self.path.resolve(), ())
        for token in overrides:
            self._apply(token)

    def _apply(self, token: str) -> None:
        delete = token.startswith("~")
        key, sep, value = token.lstrip("~+").partition("=")
        parts = key.strip().split(".")
        node = self.data = dict(self.data)
        for p in parts[:-1]:
            child = node.get(p)
            child = dict(child) if isinstance(child, dict) else {}
            node[p] = child
            node = child
        if delete:
            node.pop(parts[-1], None)
        elif sep:
            node[parts[-1]] = _parse_value(value)

    def get(self, dotted: str) -> Any:
        """The raw value, `MISSING` (absent, null or ???), or `INTERPOLATED`."""
        node: Any = self.data
        for part in dotted.split("."):
            if isinstance(node, list):
                node = next((n for n in node if isinstance(n, dict) and part in n), {})
            if not isinstance(node, dict) or part not in node:
                return MISSING
            node = node[part]
        if node is None or node == "???":
            return MISSING
        if isinstance(node, str) and "${" in node:
            return INTERPOLATED
        return node


def overridden_keys(overrides: list[str]) -> list[str]:
    """Dotted keys that overrides set or delete."""
    return [t.lstrip("~+").split("=", 1)[0].strip() for t in overrides]


def sets_key(overrides: list[str], dotted: str) -> str | None:
    """The override that sets `dotted` (or a section holding it), if any."""
    for token, key in zip(overrides, overridden_keys(overrides), strict=False):
        if dotted == key or dotted.startswith(key + "."):
            return token
    return None


def absolute(value: str, base: Path) -> str:
    return os.path.normpath(os.path.join(base, os.path.expanduser(value)))
