"""Stream JSONL (a file, a folder of shards, or an rl_prep manifest) through a row contract.

Memory and time stay bounded whatever the input: lines are read in binary one at a time with
a length cap (a longer line is reported and skipped in blocks, never loaded whole), and only
the first `max_errors` errors (and as many warnings) are kept while every one is counted; past
that, bad rows are counted without building their messages. Large inputs are split into byte
ranges checked by worker processes (one per core); a range starts after the first newline at
or past its offset, so each line is read by exactly one worker and reported with its 1-based
line number in its file.

Folders: every `*.jsonl` below it, recursively, sorted by relative path; hidden entries
(names starting with `.`, e.g. staging folders) are skipped and symlinked folders are not
followed. A folder holding `manifest.json`, or a `manifest.json` named directly, is read as an
rl_prep manifest: `splits.<name>.shards[].path`, relative to the manifest's folder.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from catalog.contracts.input_access import (
    DENIED_FIX,
    ENDLESS_FIX,
    endless_kind,
    endless_message,
    input_problem,
    stat_problem,
)
from catalog.contracts.json_text import (
    FAST_ERRORS,
    fast_decode,
    loads,
    read_head,
    stdlib_may_accept,
    strict_loads,
    surely_not_object,
)
from catalog.contracts.rows import Causes
from catalog.errors import ERROR, WARNING, Finding
from catalog.file_digest import SHA256, XXH3
from catalog.record_file import read_json

# rl_prep and the tests read lines through these
__all__ = ["input_problem", "loads", "strict_loads"]

CODE = "E-JSONL"
MAX_LINE_BYTES = 64 << 20
READ_BUFFER = 1 << 20
PARALLEL_MIN_BYTES = 64 << 20
MANIFEST = "manifest.json"
INPUT_FIX = "check the path, and that this user may read it"
REBUILD_FIX = "re-run rl_prep to rebuild the output folder"


def too_long(max_line: int) -> str:
    """How a line over the cap is described (rl_prep words the rows it refuses the same)."""
    size = f"{max_line >> 20} MiB" if max_line >= 1 << 20 else f"{max_line} bytes"
    return f"line too long (over {size})"


@dataclass
class Source:
    """One JSONL file to read, with the rows and the digest (name, hex) its manifest records."""

    path: Path
    expected_rows: int | None = None
    digest: tuple[str, str] | None = None


@dataclass
class ScanResult:
    """Counts over everything read, plus the first findings in input order."""

    lines: int = 0
    rows: int = 0  # non-blank lines: every record, good or bad
    bad_rows: int = 0
    bytes: int = 0
    blank: int = 0
    bad_by_code: Counter[str] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    causes: Causes = field(default_factory=Causes)  # row violations, one per cause
    errors: int = 0  # every error found, reported or not (a repeated row cause once)
    warnings: int = 0  # every warning found, reported or not

    def refuse(self, code: str, max_errors: int) -> bool:
        """Count one bad row of `code`; False (and the error counted) past `max_errors`, when
        no finding is to be built for it."""
        self.bad_rows += 1
        self.bad_by_code[code] += 1
        if self.errors >= max_errors:
            self.errors += 1
            return False
        return True

    def note(self, is_error: bool, max_errors: int) -> bool:
        """Count one error or warning; True while its kind is within `max_errors` (the finding
        is then to be kept), so a file of millions of bad or blank lines holds few findings."""
        if is_error:
            self.errors += 1
            return self.errors <= max_errors
        self.warnings += 1
        return self.warnings <= max_errors

    def add(self, f: Finding, max_errors: int) -> None:
        if self.note(f.is_error, max_errors):
            self.findings.append(f)

    def merge(self, other: ScanResult, max_errors: int, line_offset: int = 0) -> None:
        self.lines += other.lines
        self.rows += other.rows
        self.bad_rows += other.bad_rows
        self.bytes += other.bytes
        self.blank += other.blank
        self.bad_by_code.update(other.bad_by_code)
        known_errors, known_warnings = self.causes.merge(other.causes, line_offset)
        self.errors -= known_errors
        self.warnings -= known_warnings
        for f in other.findings:
            if line_offset and f.line is not None:
                f = replace(f, line=f.line + line_offset)
            self.add(f, max_errors)
        kept = sum(1 for f in other.findings if f.is_error)
        self.errors += other.errors - kept
        self.warnings += other.warnings - (len(other.findings) - kept)


def _finding(code: str, message: str, path: Any, line: int | None = None, **kw: Any) -> Finding:
    return Finding(code, message, str(path), line, **kw)


def _shard_problem(path: Path) -> tuple[str, str | None] | None:
    """Why a shard cannot be read as a regular file (and the fix for an endless one), or None."""
    problem = stat_problem(path)
    if problem:
        return problem, None
    kind = endless_kind(path)
    return (endless_message(kind, "a regular file"), ENDLESS_FIX) if kind else None


def _walk(root: Path, out: list[Source], findings: list[Finding]) -> None:
    def onerror(exc: OSError) -> None:
        if isinstance(exc, PermissionError):
            message, fix = "cannot list folder: permission denied", DENIED_FIX
        else:
            message, fix = f"cannot list folder ({exc.strerror})", None
        findings.append(_finding(CODE, message, exc.filename, fix=fix))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(".jsonl"):
                continue
            path = Path(dirpath) / name
            problem = _shard_problem(path)
            if problem is None:
                out.append(Source(path))
            else:
                findings.append(_finding(CODE, f"shard {problem[0]}", path, fix=problem[1]))


def _from_manifest(manifest: Path, findings: list[Finding]) -> list[Source]:
    try:
        data = read_json(manifest)
        splits = data["splits"]
        items = [(name, s) for name, split in splits.items() for s in split["shards"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        message = f"not a readable rl_prep manifest ({type(exc).__name__}: {exc})"
        fix = 'expected {"splits": {"<split>": {"shards": [{"path": ...}]}}}'
        findings.append(_finding(CODE, message, manifest, fix=fix))
        return []
    out: list[Source] = []
    for split, shard in items:
        rel = shard.get("path") if isinstance(shard, dict) else None
        if not isinstance(rel, str):
            findings.append(_finding(CODE, f"split {split!r}: a shard has no path", manifest))
            continue
        path = manifest.parent / rel
        problem = _shard_problem(path)
        if problem:
            message = f"split {split!r}: shard {rel} {problem[0]}"
            findings.append(_finding(CODE, message, manifest, fix=REBUILD_FIX))
            continue
        rows = shard.get("rows")
        named = [n for n in (XXH3, SHA256) if isinstance(shard.get(n), str)]  # the fast one first
        digest = (named[0], shard[named[0]]) if named else None
        out.append(Source(path, rows if isinstance(rows, int) else None, digest))
    if not out and not findings:
        findings.append(_finding(CODE, "manifest lists no shards", manifest))
    return out


def resolve_sources(path: Path) -> tuple[list[Source], list[Finding]]:
    """The files a JSONL artifact path stands for, and findings for what cannot be read."""
    findings: list[Finding] = []
    problem = input_problem(path)
    if problem:
        return [], [_finding(CODE, f"input {problem}", path, fix=INPUT_FIX)]
    if path.is_dir():
        if (path / MANIFEST).is_file():
            return _from_manifest(path / MANIFEST, findings), findings
        out: list[Source] = []
        _walk(path, out, findings)
        if not out and not findings:  # a shard refused above is the one finding
            fix = "point at a .jsonl file, a folder of .jsonl shards or an rl_prep manifest"
            findings.append(_finding(CODE, "folder holds no *.jsonl shards", path, fix=fix))
        return out, findings
    if path.name == MANIFEST:
        return _from_manifest(path, findings), findings
    return [Source(path)], findings


def scan_range(
    path: Path,
    check: Callable[[Any], list] | None,
    start: int = 0,
    end: int | None = None,
    *,
    max_errors: int = 20,
    max_line: int | None = None,
    progress: Callable[[int], None] | None = None,
    accept: Callable[[bytes], bool] | None = None,
    blank_is_error: bool = False,
) -> ScanResult:
    """Read the lines that start in [start, end) of one file; line numbers count from `start`.

    `accept(line)` True skips parsing and `check` (a contract's fast pre-filter); lines over
    `max_line` bytes (default MAX_LINE_BYTES) are errors, read past in blocks. A blank line or
    a byte order mark is a warning, or an error when the rows' reader fails on it
    (`blank_is_error`: a line-by-line `json.loads` reader). Past `max_errors` errors, bad rows
    are only counted: no line is decoded just to word its error."""
    max_line = MAX_LINE_BYTES if max_line is None else max_line
    res = ScanResult()
    where = str(path)
    lineno = 0
    with open(path, "rb", buffering=READ_BUFFER) as f:
        pos = start
        if start:
            f.seek(start - 1)
            if f.read(1) != b"\n":  # the previous range owns the line we landed in
                pos = start + _skip_line(f, max_line)
        else:
            head, skipped = read_head(f, where, blank_is_error)
            if head is not None:
                res.add(head, max_errors)
            if skipped is None:
                return res
            pos = skipped
        readline = f.readline
        last_tick = pos
        counting = max_errors <= 0  # past max_errors: count bad rows, build no findings

        def bad(message: str, fix: str | None = None) -> bool:
            """Count a bad row (its finding kept within max_errors); True once past them."""
            if res.refuse(CODE, max_errors):
                res.add(_finding(CODE, message, where, lineno, fix=fix), max_errors)
            return res.errors >= max_errors

        while end is None or pos < end:
            line = readline(max_line + 1)
            if not line:
                break
            lineno += 1
            n = len(line)
            if n > max_line and not line.endswith(b"\n"):
                n += _skip_line(f, max_line)
                pos += n
                counting = bad(f"{too_long(max_line)}; not read", "split the record or drop it")
                continue
            pos += n
            if progress is not None and pos - last_tick >= 8 << 20:
                progress(pos - last_tick)
                last_tick = pos
            if counting and surely_not_object(line):
                res.refuse(CODE, max_errors)
                continue
            if accept is not None and accept(line):
                continue
            try:
                row = fast_decode(line)
            except FAST_ERRORS as fast_exc:
                if not line.strip():
                    res.blank += 1
                    if res.note(blank_is_error, max_errors):
                        res.findings.append(_blank_line(where, lineno, blank_is_error))
                    counting = res.errors >= max_errors
                    continue
                if counting and not stdlib_may_accept(line, fast_exc):
                    res.refuse(CODE, max_errors)
                    continue
                try:
                    row = strict_loads(line)
                except ValueError as exc:
                    counting = bad(f"{exc}.")
                    continue
            if type(row) is not dict:
                message = f"a row must be a JSON object, got {type(row).__name__}."
                counting = bad(message, "write one JSON object per line")
                continue
            if check is None:
                continue
            violations = check(row)
            if violations:
                _count(res, violations, where, lineno)
        res.lines = lineno
        res.rows = lineno - res.blank
        res.bytes = pos - start
        if progress is not None and pos > last_tick:
            progress(pos - last_tick)
    return res


def _count(res: ScanResult, violations: list, where: str, lineno: int) -> None:
    """One row's violations into the causes; a row is bad (refused) when one is an error."""
    codes = {v.code for v in violations if v.is_error}
    if codes:
        res.bad_rows += 1
        res.bad_by_code.update(codes)
    for v in violations:
        if res.causes.add(v, where, lineno):
            if v.is_error:
                res.errors += 1
            else:
                res.warnings += 1


def _blank_line(where: str, lineno: int, is_error: bool) -> Finding:
    if is_error:
        code, severity = "E-JSONL-BLANK", ERROR
        message = (
            "blank line: the reader of these rows fails on it (NeMo-Gym aborts the rollout "
            "collection with 'Malformed JSON')"
        )
    else:
        code, severity = "W-JSONL-BLANK", WARNING
        message = "blank line (not a JSON row; line-by-line readers fail on it)"
    return _finding(code, message, where, lineno, severity=severity, fix="remove blank lines")


def _skip_line(f: Any, block: int) -> int:
    """Read past the rest of the current line in bounded blocks; the bytes skipped."""
    skipped = 0
    step = min(block, 1 << 20)
    while True:
        chunk = f.readline(step)
        skipped += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return skipped
