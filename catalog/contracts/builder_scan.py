"""Data files read as NeMo-RL's loader reads them, judged row by row by a row contract.

`builder_files` says which files of a data path are read here (builder_rows.py) rather than by
the streaming JSONL scanner; `scan_builder_files` runs their first rows through the contract
into the same ScanResult the scanner gives, so `validate` and the dry run report both alike.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from catalog.contracts.builder_rows import FIRST_ROWS, bad_file, read_builder_rows
from catalog.contracts.rows import type_name
from catalog.errors import Finding


def _noted(read: Any, row: dict, violation: Any) -> Any:
    """The violation with what the builder made of its column: absent from the file's
    columns, a CSV column typed other than text, or a CSV cell read as null."""
    column = re.split(r"[.\[]", violation.field, maxsplit=1)[0] if violation.field else ""
    if not column:
        return violation
    note = ""
    if column not in row:
        names = ", ".join(list(row)[:12]) or "none"
        note = f" (the {read.builder} builder reads the columns {names})"
    elif read.types.get(column, "str") != "str":
        kind = read.types[column]
        note = f" (the csv builder types column {column!r} as {kind}: every value in it is one)"
    elif read.types and row.get(column) is None:
        note = " (the csv builder reads an empty cell, or NA, null, None, as null)"
    return replace(violation, message=violation.message + note) if note else violation


def scan_builder_file(
    path: Path, builder: str, check: Any, max_errors: int, limit: int = FIRST_ROWS
) -> Any:
    """A ScanResult (jsonl.py) of the file's first rows through the row contract `check`;
    rows of a Parquet/Arrow file are reported as `row N` (they have no lines)."""
    from catalog.contracts.jsonl import ScanResult, _count

    read = read_builder_rows(path, builder, limit)
    res = ScanResult()
    for f in read.findings:
        res.add(f, max_errors)
        if f.is_error:
            res.bad_rows += 1
            res.bad_by_code[f.code] += 1
    where = str(path)
    for line, number, row in read.rows:
        if type(row) is not dict:
            if res.refuse("E-JSON", max_errors):
                message = f"element {number} is a {type_name(row)}, not an object"
                fix = "make every element a JSON object"
                res.add(bad_file("E-JSON", path, message, line, builder, fix), max_errors)
            continue
        found = check(row) if check is not None else []
        if found:
            found = [_noted(read, row, v) for v in found]
            _count(res, found, where, line if line is not None else number)
    res.rows = res.lines = len(read.rows)
    res.bytes = read.bytes
    causes = res.causes.findings()
    if read.rows and read.rows[0][0] is None:  # rows without lines
        causes = [_as_row(f) for f in causes]
    res.findings += causes
    res.causes.by_key.clear()
    return res


def _as_row(f: Finding) -> Finding:
    message = f.message.replace("first at lines", "first at rows")
    if " rows" not in message.split(":", 1)[0]:
        message = f"row {f.line}: {message}"
    return replace(f, message=message, line=None)


def builder_files(path: Path) -> list[tuple[Path, str]] | None:
    """The files of `path` read here, each with its builder: a csv/json-array/parquet/arrow/
    txt file, or the Arrow files of a `save_to_disk` folder; None for what the streaming JSONL
    scanner reads (jsonl.py: JSON Lines files, shard folders, rl_prep manifests)."""
    from catalog.contracts.loader_formats import builder_for, save_to_disk_files, streamed_as_jsonl

    try:
        if path.is_dir():
            files = save_to_disk_files(path)
            return None if files is None else [(f, "arrow") for f in files]
        if not path.is_file() or streamed_as_jsonl(path):
            return None
    except OSError:
        return None
    builder = builder_for(str(path))
    return [(path, builder)] if builder else None


def scan_builder_files(files: list[tuple[Path, str]], check: Any, max_errors: int) -> Any:
    """One ScanResult over the files' first rows (FIRST_ROWS in all)."""
    from catalog.contracts.jsonl import ScanResult

    total = ScanResult()
    left = FIRST_ROWS
    for path, builder in files:
        if left <= 0:
            break
        part = scan_builder_file(path, builder, check, max_errors, left)
        left -= part.rows
        total.merge(part, max_errors)
    return total
