"""The rows a Hugging Face builder yields for one data file, as NeMo-RL's dataset class sees
them, read lazily: `read_builder_rows` takes the first FIRST_ROWS within MAX_BYTES (the dry
run, `validate`), `iter_builder_rows` every row (rl_prep).

`.jsonl` (and a `.json` in JSON Lines) goes through the streaming JSONL scanner (jsonl.py). Here:
- json, a JSON array: element by element from a growing window, each row reported at the line
  it starts on;
- csv: the header names the columns; cells typed as `datasets` types them (csv_types.py); a
  row with more fields than the header, or a later value its column's type cannot hold,
  fails the builder;
- parquet, arrow: through pyarrow (columnar.py); without pyarrow the rows are not read;
- text: one row `{"text": line}` per line.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from catalog.contracts.csv_types import cast, column_names, infer_column, unfit
from catalog.contracts.loader_formats import BUILDERS
from catalog.errors import WARNING, Finding, StepsError

FIRST_ROWS = 10_000  # `datasets` builds a CSV's column types from its first 10,000-row chunk
MAX_BYTES = 64 << 20
READ_BLOCK = 1 << 20
UNCHECKED = "W-DATA-UNCHECKED"
# The code of a file the builder cannot read (or that holds no rows), by builder.
CODES = {
    "json": "E-JSON",
    "csv": "E-CSV",
    "parquet": "E-PARQUET",
    "arrow": "E-ARROW",
    "text": "E-TEXT",
}


@dataclass
class BuilderRows:
    """Rows as (line or None, row number from 1, row); `findings` what stops the builder or
    what was not read; `types` a CSV's inferred column types; `capped` a cap was reached."""

    builder: str
    rows: list[tuple[int | None, int, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)
    capped: bool = False
    bytes: int = 0
    max_bytes: int | None = MAX_BYTES


def bad_file(
    code: str, path: Path, message: str, line: int | None, builder: str, fix: str
) -> Finding:
    """A file the builder fails on, saying what the builder reads."""
    said = f"{message} (NeMo-RL reads this extension as {BUILDERS.get(builder, builder)})"
    return Finding(code, said, str(path), line, fix=fix)


Row = tuple[int | None, int, Any]  # (line or None, row number from 1, row)


def read_builder_rows(
    path: Path, builder: str, limit: int | None = FIRST_ROWS, max_bytes: int | None = MAX_BYTES
) -> BuilderRows:
    """The first `limit` rows of `path` as `builder` yields them (see the module docstring);
    None for both reads every row."""
    out = BuilderRows(builder, max_bytes=max_bytes)
    rows = iter_builder_rows(path, out)
    for row in rows:
        out.rows.append(row)
        if limit is not None and len(out.rows) >= limit:
            out.capped = True
            break
    rows.close()
    return out


def iter_builder_rows(path: Path, out: BuilderRows) -> Generator[Row, None, None]:
    """Every row of `path` as `out.builder` yields them, read lazily (rl_prep writes them all);
    what stops the builder ends the rows and is a finding in `out.findings`."""
    readers = {"json": _json_array, "csv": _csv, "text": _lines}
    try:
        yield from readers.get(out.builder, _columnar)(path, out)
    except StepsError as exc:
        out.findings.append(exc.finding)
    except OSError as exc:
        message = f"cannot read ({exc.strerror or exc})"
        out.findings.append(Finding(CODES[out.builder], message, str(path)))


class _Window:
    """A file's UTF-8 text read in growing blocks up to `cap` characters, its consumed head
    dropped now and then: an array is parsed element by element in bounded memory."""

    def __init__(self, fh: Any, cap: int | None) -> None:
        self.fh, self.cap, self.text, self.read = fh, cap, "", 0
        self.eof = self.cut = False

    def more(self) -> bool:
        """Read another block (as large as the text held, so one element costs O(size))."""
        if self.eof:
            return False
        size = max(READ_BLOCK, len(self.text))
        if self.cap is not None:
            size = min(size, self.cap - self.read)
            if size <= 0:
                self.eof = self.cut = True
                return False
        piece = self.fh.read(size)
        if not self.read:
            piece = piece.removeprefix("\ufeff")
        self.read += len(piece)
        self.eof = not piece
        self.text += piece
        return bool(piece)

    def space(self, pos: int) -> int:
        """The first non-space position from `pos`, reading on as needed."""
        while True:
            while pos < len(self.text) and self.text[pos] in " \t\r\n":
                pos += 1
            if pos < len(self.text) or not self.more():
                return pos


def _json_array(path: Path, out: BuilderRows) -> Iterator[Row]:
    try:
        with open(path, encoding="utf-8") as fh:
            window = _Window(fh, out.max_bytes)
            yield from _array_elements(path, out, window)
            out.bytes = window.read
            out.capped = out.capped or window.cut
    except UnicodeDecodeError:
        out.findings.append(_not_utf8(path, "json"))


def _array_elements(path: Path, out: BuilderRows, w: _Window) -> Iterator[Row]:
    decoder = json.JSONDecoder()
    pos = w.space(0) + 1  # past "[" (why this reader was chosen)
    line = 1 + w.text.count("\n", 0, pos)
    number = 0

    def bad(message: str) -> None:
        fix = "write one JSON array of objects, or JSON Lines"
        out.findings.append(bad_file("E-JSON", path, message, line, "json", fix))

    while True:
        start, pos = pos, w.space(pos)
        line += w.text.count("\n", start, pos)
        if pos < len(w.text) and w.text[pos] == "]":
            return
        if number:
            if pos >= len(w.text) or w.text[pos] != ",":
                if not w.cut:
                    bad(f"after element {number}: expected ',' or ']'")
                return
            start, pos = pos, w.space(pos + 1)
            line += w.text.count("\n", start, pos)
        while True:
            try:
                row, end = decoder.raw_decode(w.text, pos)
                break
            except json.JSONDecodeError as exc:
                if w.more():
                    continue
                if not (w.cut and number):  # else the cap cut this element: judged before it
                    bad(f"element {number + 1}: {exc.msg}" if number else f"the array: {exc.msg}")
                return
        number += 1
        yield line, number, row
        line += w.text.count("\n", pos, end)
        pos = end
        if pos > READ_BLOCK and pos * 2 > len(w.text):  # drop what was read
            w.text, pos = w.text[pos:], 0


class _CappedLines:
    """A text file's lines (BOM dropped) until `cap` characters are read: `cut` says the
    cap stopped it (the record in progress may be cut), `bytes` how much was read."""

    def __init__(self, fh: Any, cap: int | None) -> None:
        self.fh, self.cap, self.cut, self.bytes = fh, cap, False, 0

    def __iter__(self) -> Iterator[str]:
        for line in self.fh:
            if not self.bytes:
                line = line.removeprefix("\ufeff")
            self.bytes += len(line)
            if self.cap is not None and self.bytes > self.cap:
                self.cut = True
                return
            yield line


def _csv(path: Path, out: BuilderRows) -> Iterator[Row]:
    """Records read lazily; the first FIRST_ROWS type the columns (as `datasets` types them by
    its first chunk), later ones are cast to those types."""
    with open(path, encoding="utf-8", newline="") as fh:
        lines = _CappedLines(fh, out.max_bytes)
        records = _csv_records(path, out, lines)
        try:
            names = next(records, None)
            if names is None:
                return
            head = [r for _, r in zip(range(FIRST_ROWS), records, strict=False)]
            if lines.cut and head:
                head.pop()  # the cap may have cut it
            columns = [
                [rec[i] if i < len(rec) else None for _, rec in head] for i in range(len(names))
            ]
            out.types = {n: infer_column(col) for n, col in zip(names, columns, strict=True)}
            for number, (line, rec) in enumerate(chain(head, records), 1):
                cells = [rec[i] if i < len(rec) else None for i in range(len(names))]
                row = {n: cast(v, out.types[n]) for n, v in zip(names, cells, strict=True)}
                column = unfit(row, cells, names) if None in row.values() else None
                if column is not None:
                    message = (
                        f"column {column!r} is {out.types[column]} by the first {FIRST_ROWS} "
                        "rows, and this row's value is not: the csv builder fails casting it"
                    )
                    fix = "give the column values of one type"
                    out.findings.append(bad_file("E-CSV", path, message, line, "csv", fix))
                    return
                yield line, number, row
        except UnicodeDecodeError:
            out.findings.append(_not_utf8(path, "csv"))
        out.bytes, out.capped = lines.bytes, out.capped or lines.cut


def _not_utf8(path: Path, builder: str) -> Finding:
    """A file that is not UTF-8, at its first such line (read line by line, bounded)."""
    line, reason = None, "a character cut across lines"
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                line, reason = number, f"{exc.reason} at column {exc.start + 1}"
                break
    message = f"not UTF-8 text ({reason})"
    return bad_file(CODES[builder], path, message, line, builder, "save it as UTF-8")


def _csv_records(path: Path, out: BuilderRows, lines: _CappedLines) -> Iterator[Any]:
    """The column names, then (line, record) per record; a record the builder fails on ends
    them with its finding."""
    reader = csv.reader(lines)
    names: list[str] = []
    try:
        header = next(reader, None)
        while header is not None and not any(header):
            header = next(reader, None)
        if header is None:
            message, fix = (
                "no header row (the file is empty)",
                "write a header row naming the columns",
            )
            out.findings.append(bad_file("E-CSV", path, message, None, "csv", fix))
            return
        names = column_names(header)
        yield names
        start = reader.line_num + 1
        for record in reader:
            line, start = start, reader.line_num + 1
            if not record or (len(record) == 1 and not record[0]):
                continue  # pandas skips blank lines
            if len(record) > len(names):
                message = f"row has {len(record)} fields, the header {len(names)}"
                fix = "quote fields that hold commas, or fix the row's field count"
                out.findings.append(bad_file("E-CSV", path, message, line, "csv", fix))
                return
            yield line, record
    except csv.Error as exc:
        if not (lines.cut and names):  # else the cap cut a quoted field: rows before it stand
            fix = "close the quoted field"
            out.findings.append(bad_file("E-CSV", path, str(exc), reader.line_num, "csv", fix))


def _lines(path: Path, out: BuilderRows) -> Iterator[Row]:
    with open(path, encoding="utf-8", errors="replace", newline=None) as fh:
        lines = _CappedLines(fh, out.max_bytes)
        for number, piece in enumerate(lines, 1):
            yield number, number, {"text": piece.rstrip("\n")}
        out.bytes, out.capped = lines.bytes, out.capped or lines.cut


def _columnar(path: Path, out: BuilderRows) -> Iterator[Row]:
    from importlib.util import find_spec

    builder = out.builder
    if find_spec("pyarrow") is None:
        said = (
            f"the rows of this {builder.capitalize()} file were not checked: reading "
            "them needs pyarrow, which is not installed here"
        )
        fix = "pip install 'nemo-rl-steps[parquet]' to check them"
        out.findings.append(Finding(UNCHECKED, said, str(path), fix=fix, severity=WARNING))
        return
    from catalog.contracts.columnar import arrow_batches, parquet_batches

    batches: Iterator[list] = (
        parquet_batches(path, 1024) if builder == "parquet" else arrow_batches(path)
    )
    number = 0
    for batch in batches:
        for row in batch:
            number += 1
            yield None, number, row
