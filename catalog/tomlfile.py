"""TOML reading with locations: a parse error becomes a finding with file and line."""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Callable
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from catalog import record_file
from catalog.content_memo import ContentMemo
from catalog.errors import StepsError
from catalog.record_file import read_capped, reason
from catalog.syntax_errors import toml_error

Lines = dict[tuple, int]

_KEY = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_DOTTED = rf"{_KEY}(?:[ \t]*\.[ \t]*{_KEY})*"
_HEADER = re.compile(rf"[ \t]*(\[\[?)[ \t]*({_DOTTED})[ \t]*\]")
_PAIR = re.compile(rf"[ \t]*({_DOTTED})[ \t]*=")
_PART = re.compile(_KEY)
_GAP = re.compile(r"(?:[ \t\r\n,]|#[^\n]*)*")  # spaces, newlines, commas and comments
_SCALAR = re.compile(r"[^,\]}\n#]*")
_PARSED = ContentMemo()  # bytes -> document: one process reads codes.toml and manifests often


def load_toml(path: Path, code: str = "E-TOML") -> dict:
    """Parse a TOML file or raise `StepsError` naming the file and line (exit 2: unreadable
    input or TOML syntax is a setup error; `check` reports it as a finding instead)."""
    return parse_toml(read_bytes(path, code), path, code)


def read_bytes(path: Path, code: str = "E-TOML") -> bytes:
    """The file's bytes, or the `StepsError` (exit 2) that says why they cannot be read."""
    try:
        return read_capped(path)
    except OSError as exc:
        raise StepsError(code, f"cannot read: {reason(exc)}", path=str(path), exit_code=2) from None


def parse_toml(raw: bytes, path: Path, code: str = "E-TOML") -> dict:
    """`load_toml` of the bytes of `path` already read. Bytes parsed before in this process
    give a fresh copy of that document (the caller may change it)."""
    try:
        return _PARSED.get(raw, lambda: record_file.parse_toml(raw), len(raw))
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(exc, path, code) from None
    except ValueError as exc:  # not UTF-8, or nested too deep
        raise StepsError(
            code, str(exc), path=str(path), fix="save the file as UTF-8 TOML", exit_code=2
        ) from None


def line_of(path: Path, *needles: str) -> int | None:
    """1-based line of the first line containing every needle (for pointing at a key)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for i, text in enumerate(lines, 1):
        if all(n in text for n in needles):
            return i
    return None


def key_lines(text: str) -> Lines:
    """Every key path of a TOML document and the line it is written on, as
    `yamlfile.key_lines` gives for YAML: tables (`[[t]]` items indexed), dotted and quoted
    keys, inline tables and array items. A key inside a string is never taken for one."""
    out: Lines = {}
    arrays: dict[tuple, int] = {}
    table: tuple = ()
    newlines = [i for i, c in enumerate(text) if c == "\n"]

    def at(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + 1

    pos = 0
    while pos < len(text):
        pos = _skip(_GAP, text, pos)
        if pos >= len(text):
            break
        line = at(pos)
        if head := _HEADER.match(text, pos):
            table = _table(_parts(head[2]), head[1] == "[[", arrays)
            for i in range(1, len(table) + 1):
                out.setdefault(table[:i], line)
            pos = head.end() + (head[1] == "[[")
        elif pair := _PAIR.match(text, pos):
            key = (*table, *_parts(pair[1]))
            out[key] = line
            pos = _value(text, pair.end(), key, out, at)
        else:  # not TOML we can read: skip the line (the parser reports it)
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end
    return out


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p.strip("\"'") if p[0] in "\"'" else p for p in _PART.findall(dotted))


def _table(parts: tuple, is_item: bool, arrays: dict[tuple, int]) -> tuple:
    """The key path of a table header; `[[a]]` counts items, and `[a.b]` after it is in the
    last item of `a`."""
    path: tuple = ()
    for i, part in enumerate(parts):
        path = (*path, part)
        if path in arrays and (i < len(parts) - 1 or not is_item):
            path = (*path, arrays[path])
    if is_item:
        arrays[path] = arrays.get(path, -1) + 1
        path = (*path, arrays[path])
    return path


def _skip(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where `pattern` (one that may match nothing, so always matches) ends from `pos`."""
    found = pattern.match(text, pos)
    return found.end() if found else pos


def _value(text: str, pos: int, key: tuple, out: Lines, at: Callable[[int], int]) -> int:
    """Skip the value at `pos`, noting the lines of inline-table keys and array items."""
    pos = _skip(_GAP, text, pos)
    for quote in ('"""', "'''", '"', "'"):
        if text.startswith(quote, pos):
            return _string_end(text, pos, quote)
    if text.startswith("[", pos):
        index, pos = 0, pos + 1
        while (pos := _skip(_GAP, text, pos)) < len(text) and text[pos] != "]":
            item = (*key, index)
            out[item] = at(pos)
            pos, index = _value(text, pos, item, out, at), index + 1
        return pos + 1
    if text.startswith("{", pos):
        pos += 1
        while (pos := _skip(_GAP, text, pos)) < len(text) and text[pos] != "}":
            pair = _PAIR.match(text, pos)
            if pair is None:
                return _skip(_SCALAR, text, pos + 1)
            inner = (*key, *_parts(pair[1]))
            out[inner] = at(pos)
            pos = _value(text, pair.end(), inner, out, at)
        return pos + 1
    return max(_skip(_SCALAR, text, pos), pos + 1)


def _string_end(text: str, pos: int, quote: str) -> int:
    i = pos + len(quote)
    while i < len(text):
        if quote[0] == '"' and text[i] == "\\":
            i += 2
            continue
        if text.startswith(quote, i):
            i += len(quote)
            while len(quote) == 3 and text.startswith(quote[0], i):  # up to two quotes more
                i += 1
            return i
        i += 1
    return i
