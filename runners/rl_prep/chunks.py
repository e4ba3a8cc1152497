"""One chunk of a dataset, processed where it is cheap to run in parallel: parse, transform,
check, split and weigh every row, and return the bytes each split gets.

The main process reads chunks in order, hands them to `process_chunk` (in worker processes or
in-process) and writes the results in the same order, so the output is the same whatever the
number of workers. Everything here is picklable: jobs and chunks go to workers, results back.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from catalog.contracts.jsonl import loads
from catalog.errors import StepsError
from runners.rl_prep.blend import DatasetSpec
from runners.rl_prep.rowcheck import RowCheck, row_check
from runners.rl_prep.sources import canonical_bytes
from runners.rl_prep.split import SPLITS, TRAIN, Splitter
from runners.rl_prep.transforms import TRANSFORMS, RowRejected

JSON_SPACE = b" \t\r\n"


@dataclass(frozen=True)
class DatasetJob:
    """What a worker needs to process any chunk of one dataset."""

    spec: DatasetSpec
    transform: str
    output_type: str
    splitter: Splitter
    on_bad_row: str
    hold_val_candidate: bool  # keep back the train row nearest val (see prepare.py)


@dataclass(frozen=True)
class Chunk:
    """Consecutive rows of one file: JSONL bytes (whole lines) or decoded columnar rows."""

    path: str
    first_line: int
    payload: bytes | list


@dataclass
class ChunkResult:
    blobs: dict[str, bytes] = field(default_factory=dict)
    lengths: dict[str, list[int]] = field(default_factory=dict)  # row sizes, for shard cuts
    written: Counter = field(default_factory=Counter)  # rows per split (train with repeats)
    read: int = 0
    train_sources: int = 0  # distinct train rows, the held-back one included
    skipped: Counter = field(default_factory=Counter)
    candidate: tuple[float, bytes, int] | None = None  # (u, row bytes, copies)
    error: dict | None = None  # a bad row under on_bad_row=error: code, message, path, line, fix


_CHECKS: dict[str, RowCheck] = {}


def _check_for(output_type: str) -> RowCheck:
    if output_type not in _CHECKS:
        _CHECKS[output_type] = row_check(output_type)
    return _CHECKS[output_type]


def _dumps(row: dict) -> bytes:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class _Rows:
    """The per-row decisions of one chunk, accumulated into split blobs."""

    def __init__(self, job: DatasetJob) -> None:
        self.job = job
        self.check = _check_for(job.output_type)
        self.transform = TRANSFORMS[job.transform]
        self.key = job.splitter.key()
        self.out = {s: [] for s in SPLITS}
        self.result = ChunkResult()

    def bad(self, code: str, message: str, path: str, line: int, fix: str | None) -> bool:
        """Count a bad row (skip) or record it as the chunk's error; True means stop."""
        if self.job.on_bad_row == "skip":
            self.result.skipped[code] += 1
            return False
        self.result.error = {
            "code": code,
            "message": f"dataset `{self.job.spec.name}`: {message}",
            "path": path,
            "line": line,
            "fix": (fix or "fix or remove the row")
            + "; or set on_bad_row=skip to drop such rows and count them",
        }
        return True

    def add(self, row: Any, content: bytes, raw: bytes | None, path: str, line: int) -> bool:
        """Decide one parsed row; True means stop (a bad row under on_bad_row=error)."""
        if not isinstance(row, dict):
            return self.bad(
                "E-JSONL",
                f"expected a JSON object, got {type(row).__name__}",
                path,
                line,
                "write one JSON object per line",
            )
        try:
            out, changed = self.transform(row, self.job.spec)
        except RowRejected as rej:
            return self.bad(rej.code, f"{rej.field}: {rej.message}", path, line, rej.fix)
        problem = self.check(out)
        if problem is not None:
            where = f"{problem.field}: " if problem.field else ""
            return self.bad(problem.code, where + problem.message, path, line, problem.fix)
        data = raw + b"\n" if raw is not None and not changed else _dumps(out)
        splitter = self.job.splitter
        u, v = splitter.draw(content, self.key)
        split = splitter.split_of(u)
        res = self.result
        if split != TRAIN:
            self.out[split].append(data)
            res.written[split] += 1
            return False
        res.train_sources += 1
        copies = splitter.repeats(v)
        if self.job.hold_val_candidate and (res.candidate is None or u > res.candidate[0]):
            previous, res.candidate = res.candidate, (u, data, copies)
            if previous is None:
                return False
            _, data, copies = previous
        if copies:
            self.out[TRAIN].extend([data] * copies)
            res.written[TRAIN] += copies
        return False

    def finish(self) -> ChunkResult:
        for split, rows in self.out.items():
            self.result.blobs[split] = b"".join(rows)
            self.result.lengths[split] = [len(r) for r in rows]
        return self.result


def _jsonl(rows: _Rows, chunk: Chunk) -> None:
    payload = chunk.payload
    assert isinstance(payload, bytes)
    line = chunk.first_line - 1
    for raw in payload.split(b"\n"):
        line += 1
        raw = raw.strip(JSON_SPACE)
        if not raw:
            continue
        rows.result.read += 1
        try:
            row = loads(raw)
        except ValueError as exc:
            msg = str(exc)
            if rows.bad("E-JSONL", msg, chunk.path, line, "write one JSON object per line"):
                return
            continue
        if rows.add(row, raw, raw, chunk.path, line):
            return


def _columnar(rows: _Rows, chunk: Chunk) -> None:
    assert isinstance(chunk.payload, list)
    for offset, row in enumerate(chunk.payload):
        rows.result.read += 1
        if rows.add(row, canonical_bytes(row), None, chunk.path, chunk.first_line + offset):
            return


def process_chunk(job: DatasetJob, chunk: Chunk) -> ChunkResult:
    """Every row of the chunk decided; a bad row under on_bad_row=error ends it with `error`."""
    try:
        rows = _Rows(job)
        if isinstance(chunk.payload, bytes):
            _jsonl(rows, chunk)
        else:
            _columnar(rows, chunk)
        return rows.finish()
    except StepsError as exc:  # StepsError does not survive pickling: send its finding
        f = exc.finding
        err = {"code": f.code, "message": f.message, "path": f.path, "line": f.line, "fix": f.fix}
        return ChunkResult(error=err)
