"""The one reader of JSONL text for the contracts: bad input is a ValueError worded for a finding.

JSON nested deeper than the json reader goes makes msgspec and the standard library (so
NeMo-RL's and NeMo-Gym's `json.loads` too) raise RecursionError: here it is "nested deeper than
Python 3.X's json reader goes". How deep that is depends on the release (measured: 994 levels on
3.10/3.11, the recursion limit; 1,497 on 3.12 and 9,998 on 3.13, C recursion limits).
A file's first bytes are looked at once: a compressed stream or a byte order mark would otherwise
fail every line, or the first, with no hint of the cause.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import msgspec

from catalog.errors import ERROR, WARNING, Finding

BOM = b"\xef\xbb\xbf"
COMPRESSED = {  # leading bytes -> (format, decompressor, streaming reader)
    b"\x1f\x8b": ("gzip", "gunzip", "zcat"),
    b"\x28\xb5\x2f\xfd": ("zstd", "unzstd", "zstdcat"),
    b"\xfd7zXZ\x00": ("xz", "unxz", "xzcat"),
    b"BZh": ("bzip2", "bunzip2", "bzcat"),
}
# What msgspec refuses and the standard library accepts (NaN/Infinity literals, lone
# surrogate escapes, floats out of range): only such lines need the slow judge when counting.
_LENIENT = re.compile(rb"NaN|Infinity|\\u")

fast_decode = msgspec.json.Decoder().decode
FAST_ERRORS = (msgspec.DecodeError, ValueError, RecursionError)
_raw_decode = json.JSONDecoder().raw_decode
JSON_DEPTH = "about 1,000 levels before 3.12, 1,500 on 3.12, 10,000 on 3.13"


def strict_loads(line: bytes) -> Any:
    """The standard library's reading of one line: it decides validity and words the error."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"not UTF-8: byte 0x{line[exc.start]:02x} at column {exc.start + 1}"
        ) from None
    text = text.strip(" \t\r\n")
    try:
        row, end = _raw_decode(text)
    except RecursionError:
        raise ValueError(
            f"invalid JSON: nested deeper than Python {'.'.join(map(str, sys.version_info[:2]))}'s"
            f" json reader goes ({JSON_DEPTH}; it stops with RecursionError)"
        ) from None
    except ValueError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    if end != len(text):
        raise ValueError(f"invalid JSON: extra data after the value at column {end + 1}")
    return row


def loads(line: bytes) -> Any:
    """One JSONL line as a value: msgspec's decoder (about 3x faster), and the standard library
    for any line msgspec refuses, so the lines accepted and their values are the same either way
    (NaN and lone surrogates included)."""
    try:
        return fast_decode(line)
    except FAST_ERRORS:
        return strict_loads(line)


def stdlib_may_accept(line: bytes, exc: Exception) -> bool:
    """Whether the standard library might read a line msgspec refused with `exc`: False lets
    rows past --max-errors be counted as bad without building the standard library's error."""
    if isinstance(exc, RecursionError) or str(exc).startswith("Number out of range"):
        return True
    return _LENIENT.search(line) is not None


def surely_not_object(line: bytes) -> bool:
    """True for a non-blank line that cannot be a JSON object (it does not start with `{` and
    end with `}`): a bad row, told without decoding it."""
    body = line.strip()
    return bool(body) and (body[0] != 0x7B or body[-1] != 0x7D)


def compressed(head: bytes) -> tuple[str, str, str] | None:
    """(format, decompressor, streaming reader) when `head` starts a compressed stream."""
    return next((what for magic, what in COMPRESSED.items() if head.startswith(magic)), None)


def read_head(f: Any, where: str, bom_is_error: bool) -> tuple[Finding | None, int | None]:
    """Look at a JSONL file's first bytes once (peeked, so a pipe loses nothing): its finding,
    if any, and the bytes to read past (None: read no further). A compressed stream is one
    error; a UTF-8 byte order mark is one finding, read past: NeMo-RL's NemoGymDataset reads
    lines as text and `json.loads` each, which fails on it; `datasets`' JSON reader (pyarrow)
    skips it."""
    head = f.peek(8)[:8]
    kind = compressed(head)
    if kind is not None:
        name, tool, cat = kind
        message = f"is {name}-compressed (it starts with bytes {head[:2].hex(' ')}), not JSON lines"
        fix = f"decompress it ({tool} FILE), or validate the stream: <({cat} FILE)"
        return Finding("E-JSONL", message, where, fix=fix), None
    if not head.startswith(BOM):
        return None, 0
    f.read(len(BOM))
    if bom_is_error:
        why = "the reader of these rows (json.loads per line) fails on it"
        code, severity = "E-JSONL-BOM", ERROR
    else:
        why = "datasets' reader skips it, line-by-line json.loads readers fail on it"
        code, severity = "W-JSONL-BOM", WARNING
    message = f"starts with a UTF-8 byte order mark: {why}"
    fix = "save the file as UTF-8 without a BOM"
    return Finding(code, message, where, 1, fix=fix, severity=severity), len(BOM)
