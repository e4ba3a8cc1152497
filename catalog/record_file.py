"""The one bounded reader of the JSON, TOML and YAML files steps opens (YAML through
`catalog.yamlfile`), so no file can make a command hang, fill memory or end in a traceback.

A record may come from anyone who can write its folder: only a regular file is read (a FIFO
never ends), at most `MAX_RECORD_BYTES`, as UTF-8, nested at most `MAX_DEPTH` levels. An
unreadable file is an OSError whose `strerror` says why; one that does not parse a ValueError.
`tests/test_architecture.py` refuses parsing text that is not a file outside a listed few.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_RECORD_BYTES = 64 << 20  # a registry of thousands of versions is a few MiB
MAX_DEPTH = 100  # records and configs are under 20 levels deep
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"
KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def read_capped(path: str | os.PathLike[str], limit: int = MAX_RECORD_BYTES) -> bytes:
    """A regular file's bytes, at most `limit` of them; anything else is an `OSError` whose
    `strerror` says why (a device, FIFO or socket is refused before it is read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without waiting for a writer
    with os.fdopen(fd, "rb") as fh:
        kind = KINDS.get(stat.S_IFMT(os.fstat(fd).st_mode))
        if kind is not None:
            code = errno.EISDIR if kind == "a directory" else errno.EINVAL
            raise OSError(code, f"is {kind}, not a regular file", str(path))
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"is larger than {limit >> 20} MiB, the most read", str(path))
    return data


def utf8(raw: bytes) -> str:
    """`raw` as text; a ValueError naming the first byte that is not UTF-8 and its line."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValueError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line})") from None


def bounded(parse: Callable[[], Any]) -> Any:
    """`parse()` when no dict or list in it is nested deeper than `MAX_DEPTH`, else a ValueError
    (walked without recursion; a parser's own RecursionError is that too)."""
    try:
        value = parse()
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(TOO_DEEP)
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return value


def parse_json(raw: bytes | str) -> Any:
    """JSON text (bytes must be UTF-8) as a value; ValueError when it is not, or too deep."""
    text = utf8(raw) if isinstance(raw, bytes) else raw
    return bounded(lambda: json.loads(text))


def read_json(path: str | os.PathLike[str], limit: int = MAX_RECORD_BYTES) -> Any:
    """A JSON file: OSError when it cannot be read (`read_capped`), ValueError when it is not
    UTF-8 JSON nested at most `MAX_DEPTH` levels."""
    return parse_json(read_capped(path, limit))


def read_json_object(path: str | os.PathLike[str]) -> dict | None:
    """A JSON object file that may not be there (a pipeline's or a stage's record): None when it
    is missing, cannot be read, is not JSON or not an object."""
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def parse_toml(raw: bytes) -> dict:
    """TOML bytes as a dict; `tomllib.TOMLDecodeError` (a ValueError) at its line, ValueError
    when not UTF-8 or too deep."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib

    text = utf8(raw)
    return bounded(lambda: tomllib.loads(text))


def read_toml(path: str | os.PathLike[str], limit: int = MAX_RECORD_BYTES) -> dict:
    """A TOML file, as `read_json` reads JSON."""
    return parse_toml(read_capped(path, limit))


def reason(exc: BaseException) -> str:
    """Why a read failed, in a few words for a finding."""
    if isinstance(exc, FileNotFoundError):
        return "does not exist"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def exists_as(path: Path, file: bool = False) -> bool:
    """Whether `path` is there (`file`: as a regular file); a name too long or otherwise unfit
    to be a path is not (`Path.exists` raises OSError for it)."""
    try:
        return path.is_file() if file else path.exists()
    except (OSError, ValueError):
        return False
