"""Read a YAML (or JSON) file we own the format of: its data, the line of every key, and clean
errors for a file that cannot be read, is not UTF-8 or is not YAML (exit 2: a setup problem).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from catalog.errors import StepsError
from catalog.yamlerror import yaml_error

Lines = dict[tuple, int]


def key_lines(node: Any, prefix: tuple = (), out: Lines | None = None) -> Lines:
    """Each key path (strings and list indexes) of a composed YAML node -> its 1-based line."""
    import yaml

    out = {} if out is None else out
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = (*prefix, k.value)
            out[key] = k.start_mark.line + 1
            key_lines(v, key, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            out[(*prefix, i)] = v.start_mark.line + 1
            key_lines(v, (*prefix, i), out)
    return out


def line_of(lines: Lines, *keys: Any) -> int | None:
    """The line of the deepest of `keys` the file has (falls back to its parents)."""
    while keys:
        if keys in lines:
            return lines[keys]
        keys = keys[:-1]
    return None


def read_bytes(path: Path, code: str, what: str, fix: str) -> bytes:
    """The file's bytes; missing, a folder or unreadable is `code` with exit 2."""
    try:
        return path.read_bytes()
    except OSError as exc:
        reason = "does not exist" if isinstance(exc, FileNotFoundError) else None
        if isinstance(exc, IsADirectoryError):
            reason = "is a directory, not a file"
        raise StepsError(
            code,
            f"cannot read the {what}: {reason or exc.strerror or exc}",
            path=str(path),
            fix=fix,
            exit_code=2,
        ) from None


def load_yaml(
    path: Path, *, what: str, read_code: str, syntax_code: str, fix: str
) -> tuple[Any, Lines, bytes]:
    """(data, key lines, raw bytes) of a YAML file; every read or syntax error exits 2."""
    import yaml

    raw = read_bytes(path, read_code, what, fix)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise StepsError(
            read_code,
            f"the {what} is not UTF-8 text (byte 0x{raw[exc.start]:02x})",
            path=str(path),
            line=line,
            fix=f"save the {what} as UTF-8",
            exit_code=2,
        ) from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = yaml.compose(text, Loader=loader)
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path, syntax_code, exit_code=2) from None
    return data, key_lines(node), raw
