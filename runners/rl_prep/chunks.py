"""One chunk of a dataset, processed where it is cheap to run in parallel: every row parsed,
transformed, checked, split and weighed. A row kept as is comes back as a byte range of the
source, which the main process reads again, so row data never crosses a process boundary."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from catalog.contracts.jsonl import MAX_LINE_BYTES, loads, too_long
from catalog.contracts.rows import RowViolation
from catalog.errors import StepsError
from runners.rl_prep.placeholders import KEY as PLACEHOLDER
from runners.rl_prep.placeholders import resolve
from runners.rl_prep.sources import Chunk, canonical_bytes, read_chunk
from runners.rl_prep.spec import DatasetSpec
from runners.rl_prep.split import SPLITS, TRAIN, Splitter
from runners.rl_prep.transforms import (
    COMPATIBLE,
    KEEPS_VALID_ROWS,
    TRANSFORMS,
    RowRejected,
    apply_map,
)

JSON_SPACE = b" \t\r\n"
LONG_FIX = "split the record or drop it"
_OPEN, _CLOSE = ord("{"), ord("}")
RowCheck = Callable[[dict], "RowViolation | None"]
Accept = Callable[[bytes], bool]


@dataclass(frozen=True)
class DatasetJob:
    """What a worker needs to process any chunk of one dataset."""

    spec: DatasetSpec
    transform: str
    output_type: str
    splitter: Splitter
    on_bad_row: str
    hold_val_candidate: bool  # keep back the train row nearest val (see build.py)
    max_line: int = MAX_LINE_BYTES  # longer rows are bad rows: `validate` would refuse them
    # agent -> its server's task fields (`routes`): only the dry run knows the Gym (first_rows.py)
    routes: dict | None = None


SKIP_FIX = "; or set on_bad_row=skip to drop such rows and count them"
Span = tuple[int, int]  # (start, stop) of whole lines, newlines included, in the source file
Part = tuple["Span | bytes", int]  # a run of rows of one split (file range or bytes), row count


@dataclass
class ChunkResult:
    parts: dict[str, list[Part]] = field(default_factory=dict)
    written: Counter = field(default_factory=Counter)  # rows per split (train with repeats)
    read: int = 0
    lines: int = 0  # lines (JSONL) or rows (columnar) in the chunk, for the next chunk's numbers
    train_sources: int = 0  # distinct train rows, the held-back one included
    skipped: Counter = field(default_factory=Counter)
    candidate: tuple[int, bytes, int] | None = None  # (u, row bytes, copies)
    error: dict | None = None  # a bad row under on_bad_row=error: code, message, path, line, fix


class _SplitOut:
    """One split's rows of a chunk merged into runs: adjacent file ranges into one range,
    re-serialized rows into one bytes object."""

    __slots__ = ("blobs", "n", "parts", "start", "stop")

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.blobs: list[bytes] = []
        self.start = self.stop = -1
        self.n = 0

    def add(self, data: Span | bytes) -> None:
        if type(data) is tuple:
            if data[0] != self.stop:
                self.close()
                self.start = data[0]
            self.stop = data[1]
        else:
            if self.stop >= 0:
                self.close()
            self.blobs.append(data)  # type: ignore[arg-type]
        self.n += 1

    def close(self) -> None:
        if self.n:
            if self.blobs:
                self.parts.append((b"".join(self.blobs), self.n))
                self.blobs.clear()
            else:
                self.parts.append(((self.start, self.stop), self.n))
        self.n = 0
        self.start = self.stop = -1


def row_check(output_type: str, routes: dict | None = None) -> tuple[RowCheck, Accept | None]:
    """The first contract error of a row (or None), and the contract's fast pre-filter of raw lines
    (or None); `routes`: Gym agents' task fields, checked too."""
    from catalog.contracts import get_row_contract
    from catalog.types import load_types

    graph = load_types()
    if output_type not in graph:
        raise StepsError(
            "E-CONFIG-VALUE",
            f"output_type: unknown artifact type `{output_type}`",
            key="output_type",
            fix="use nemo_gym_jsonl, preference_jsonl, verifiable_prompt_jsonl or training_jsonl",
        )
    options = {"routes": routes} if routes else {}
    contract = get_row_contract(graph.types[output_type].contract, **options)
    check = contract.check

    def first_problem(row: dict) -> RowViolation | None:
        # A warning (data quality the trainer accepts) never refuses a row; `validate` reports it.
        return next((v for v in check(row) if v.is_error), None)

    return first_problem, contract.accept


@functools.cache
def _check_for(output_type: str) -> tuple[RowCheck, Accept | None]:
    return row_check(output_type)


def warm_checks() -> None:
    """Build every output type's row check now, so workers forked after this inherit them built."""
    for output_type in COMPATIBLE:
        _check_for(output_type)


def _dumps(row: dict) -> bytes:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class _Rows:
    """The per-row decisions of one chunk, accumulated into split runs."""

    def __init__(self, job: DatasetJob) -> None:
        self.job = job
        if job.routes:
            self.check, accept = row_check(job.output_type, job.routes)
        else:
            self.check, accept = _check_for(job.output_type)
        # An accepted line is a valid row the transform keeps as is (unless reshaped first).
        keeps = job.transform in KEEPS_VALID_ROWS and not job.spec.reshapes
        self.accept = accept if keeps else None
        self.transform = TRANSFORMS[job.transform]
        self.decide = job.splitter.decide
        self.out = {s: _SplitOut() for s in SPLITS}
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
            "fix": (fix or "fix or remove the row") + SKIP_FIX,
        }
        return True

    def add(
        self, row: Any, content: bytes, kept: Span | bytes | None, path: str, line: int
    ) -> bool:
        """Decide one parsed row; `kept` is what to write if the transform leaves it as is. True
        means stop (a bad row under on_bad_row=error)."""
        if not isinstance(row, dict):
            return self.bad(
                "E-JSONL",
                f"expected a JSON object, got {type(row).__name__}",
                path,
                line,
                "write one JSON object per line",
            )
        spec = self.job.spec
        try:
            reshaped = PLACEHOLDER in row or bool(spec.field_map)
            if PLACEHOLDER in row:
                row = resolve(row, spec.placeholders)
            if spec.field_map:
                row = apply_map(row, spec.field_map)
            out, changed = self.transform(row, spec)
        except RowRejected as rej:
            return self.bad(rej.code, f"{rej.field}: {rej.message}", path, line, rej.fix)
        problem = self.check(out)
        if problem is not None:
            where = f"{problem.field}: " if problem.field else ""
            return self.bad(problem.code, where + problem.message, path, line, problem.fix)
        data = kept if kept is not None and not (changed or reshaped) else _dumps(out)
        if type(data) is bytes and len(data) - 1 > self.job.max_line:
            return self.bad(
                "E-JSONL", f"{too_long(self.job.max_line)} once written", path, line, LONG_FIX
            )
        self.place(data, content)
        return False

    def place(self, data: Span | bytes, content: bytes) -> None:
        """Send a good row's output to its split (train: as many copies as its weight)."""
        split, u, copies = self.decide(content)
        res = self.result
        if split != TRAIN:
            self.out[split].add(data)
            res.written[split] += 1
            return
        res.train_sources += 1
        if self.job.hold_val_candidate and (res.candidate is None or u > res.candidate[0]):
            if type(data) is tuple:
                data = content + b"\n"  # a kept line is its content and a newline
            previous, res.candidate = res.candidate, (u, data, copies)  # type: ignore[assignment]
            if previous is None:
                return
            _, data, copies = previous
        add = self.out[TRAIN].add
        for _ in range(copies):
            add(data)
        res.written[TRAIN] += copies

    def finish(self) -> ChunkResult:
        for split, out in self.out.items():
            out.close()
            self.result.parts[split] = out.parts
        return self.result


def _jsonl(rows: _Rows, chunk: Chunk) -> None:
    payload = read_chunk(chunk)
    size = len(payload)
    accept, place, result, find = rows.accept, rows.place, rows.result, payload.find
    decide, train = rows.decide, rows.out[TRAIN]
    max_line = rows.job.max_line
    # Inline fast path: an accepted `{...}` line going to train once, not the val candidate.
    best = -1 if rows.job.hold_val_candidate else 1 << 64  # u of the held-back candidate
    base = chunk.offset
    line = pos = plain_train = 0
    while pos < size:
        line += 1
        start = pos
        end = find(b"\n", pos)
        pos = end + 1 if end >= 0 else size
        if (end if end >= 0 else size) - start > max_line:
            result.read += 1
            if rows.bad("E-JSONL", too_long(max_line), chunk.path, line, LONG_FIX):
                return
            continue
        piece = payload[start:end] if end >= 0 else payload[start:]
        tried = (
            accept is not None
            and end > start
            and payload[start] == _OPEN
            and payload[end - 1] == _CLOSE
        )
        if tried and accept(piece):  # type: ignore[misc]
            split, u, copies = decide(piece)
            if split is TRAIN and copies == 1 and u <= best:
                if train.stop == base + start:
                    train.stop = base + pos
                    train.n += 1
                else:
                    train.add((base + start, base + pos))
                plain_train += 1
            else:
                result.read += 1
                place((base + start, base + pos), piece)
                if result.candidate is not None:
                    best = result.candidate[0]
            continue
        raw = piece if tried else piece.strip(JSON_SPACE)
        if not raw:
            continue
        result.read += 1
        kept = (base + start, base + pos) if raw is piece and end >= 0 else raw + b"\n"
        if not tried and accept is not None and accept(raw):
            place(kept, raw)
            if result.candidate is not None:
                best = result.candidate[0]
            continue
        try:
            row = loads(raw)
        except ValueError as exc:
            if rows.bad("E-JSONL", str(exc), chunk.path, line, "write one JSON object per line"):
                return
            continue
        if rows.add(row, raw, kept, chunk.path, line):
            return
        if result.candidate is not None:
            best = result.candidate[0]
    result.lines = line
    result.read += plain_train
    result.train_sources += plain_train
    result.written[TRAIN] += plain_train


def _columnar(rows: _Rows, chunk: Chunk) -> None:
    assert chunk.rows is not None
    for number, row in enumerate(chunk.rows, 1):
        rows.result.read += 1
        if rows.add(row, canonical_bytes(row), None, chunk.path, number):
            return
    rows.result.lines = len(chunk.rows)


def process_chunk(job: DatasetJob, chunk: Chunk) -> ChunkResult:
    """Every row of the chunk decided; a bad row under on_bad_row=error ends it with `error`."""
    try:
        rows = _Rows(job)
        if chunk.rows is None:
            _jsonl(rows, chunk)
        else:
            _columnar(rows, chunk)
        return rows.finish()
    except StepsError as exc:  # StepsError does not survive pickling: send its finding
        f = exc.finding
        err = {"code": f.code, "message": f.message, "path": f.path, "line": f.line, "fix": f.fix}
        return ChunkResult(error=err)
