"""The first rows a Hugging Face builder yields for one data file, as NeMo-RL's dataset class
sees them, read with a row and a byte cap.

`.jsonl` (and a `.json` in JSON Lines) goes through the streaming JSONL scanner (jsonl.py),
every line. The other builders are read here, bounded (FIRST_ROWS rows, MAX_BYTES bytes):
- json, a JSON array: each element one row, reported at the line it starts on;
- csv: the header names the columns; values typed as `datasets` types them (pandas'
  `read_csv` inference over the first chunk: a column whose every value is an integer is int,
  one with a decimal number or an empty cell among numbers float, `true`/`false` alone bool,
  the rest strings; pandas' NA words such as "", "NA", "null" are null); a row with more
  fields than the header fails the builder;
- parquet, arrow: through pyarrow (columnar.py); without pyarrow the rows are not read;
- text: one row `{"text": line}` per line.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
# pandas' default NA strings (pandas/_libs/parsers.pyx STR_NA_VALUES)
NA_WORDS = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
     "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}
)  # fmt: skip
_INT = re.compile(r"\s*[-+]?\d+\s*\Z")
_FLOAT = re.compile(
    r"\s*[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|(?i:inf|infinity))\s*\Z"
)
_INT_RANGE = (-(1 << 63), (1 << 64) - 1)  # int64, or uint64 for large non-negative values
_TRUE, _FALSE = frozenset({"True", "TRUE", "true"}), frozenset({"False", "FALSE", "false"})


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


def expects(builder: str) -> str:
    """What the builder reads, for findings."""
    return BUILDERS.get(builder, builder)


def bad_file(
    code: str, path: Path, message: str, line: int | None, builder: str, fix: str
) -> Finding:
    return Finding(
        code,
        f"{message} (NeMo-RL reads this extension as {expects(builder)})",
        str(path),
        line,
        fix=fix,
    )


def read_builder_rows(
    path: Path, builder: str, limit: int | None = FIRST_ROWS, max_bytes: int | None = MAX_BYTES
) -> BuilderRows:
    """The first `limit` rows of `path` as `builder` yields them (see the module docstring);
    None for both reads every row (rl_prep, which writes them all)."""
    out = BuilderRows(builder, max_bytes=max_bytes)
    limit = limit if limit is not None else 1 << 62
    try:
        if builder == "json":
            _json_array(path, out, limit)
        elif builder == "csv":
            _csv(path, out, limit)
        elif builder == "text":
            _lines(path, out, limit)
        else:
            _columnar(path, out, builder, limit)
    except StepsError as exc:
        out.findings.append(exc.finding)
    except OSError as exc:
        message = f"cannot read ({exc.strerror or exc})"
        out.findings.append(Finding(CODES[builder], message, str(path)))
    return out


def _head(path: Path, out: BuilderRows) -> bytes:
    cap = out.max_bytes
    with open(path, "rb") as fh:
        data = fh.read(cap + 1) if cap is not None else fh.read()
    out.capped = cap is not None and len(data) > cap
    data = data[:cap] if cap is not None else data
    out.bytes = len(data)
    return data


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


def _json_array(path: Path, out: BuilderRows, limit: int) -> None:
    try:
        with open(path, encoding="utf-8") as fh:
            window = _Window(fh, out.max_bytes)
            _array_elements(path, out, limit, window)
            out.bytes = window.read
            out.capped = out.capped or window.cut
    except UnicodeDecodeError:
        line, reason = _first_bad_line(path)
        message = f"not UTF-8 text ({reason})"
        out.findings.append(bad_file("E-JSON", path, message, line, "json", "save it as UTF-8"))


def _array_elements(path: Path, out: BuilderRows, limit: int, w: _Window) -> None:
    decoder = json.JSONDecoder()
    pos = w.space(0) + 1  # past "[" (why this reader was chosen)
    line = 1 + w.text.count("\n", 0, pos)
    number = 0

    def bad(message: str) -> None:
        fix = "write one JSON array of objects, or JSON Lines"
        out.findings.append(bad_file("E-JSON", path, message, line, "json", fix))

    while number < limit:
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
        out.rows.append((line, number, row))
        line += w.text.count("\n", pos, end)
        pos = end
        if pos > READ_BLOCK and pos * 2 > len(w.text):  # drop what was read
            w.text, pos = w.text[pos:], 0
    out.capped = True


def infer_column(values: list[str | None]) -> str:
    """The type pandas' `read_csv` gives a column of raw cells (None: a missing cell)."""
    present = [v for v in values if v is not None and v not in NA_WORDS]
    if not present:
        return "float" if values else "str"  # an all-NA column is float64 of NaN
    missing = len(present) < len(values)
    if all(_INT.match(v) for v in present):
        low, high = _INT_RANGE
        if all(low <= int(v) <= high for v in present):
            return "float" if missing else "int"
        return "str"  # past uint64: pandas keeps the text
    if all(_FLOAT.match(v) for v in present):
        return "float"
    if all(v in _TRUE or v in _FALSE for v in present):
        return "bool"  # with NA cells: bools and nulls
    return "str"


def typed(value: str | None, kind: str) -> Any:
    """One cell as the builder yields it (NA cells are null)."""
    if value is None or value in NA_WORDS:
        return None
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "bool":
        return value in _TRUE
    return value


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


def _csv(path: Path, out: BuilderRows, limit: int) -> None:
    """Records read lazily from the file (the row and byte caps stop the read)."""
    with open(path, encoding="utf-8", newline="") as fh:
        lines = _CappedLines(fh, out.max_bytes)
        try:
            found = _csv_records(path, out, limit, lines)
        except UnicodeDecodeError:
            line, reason = _first_bad_line(path)
            message = f"not UTF-8 text ({reason})"
            out.findings.append(
                bad_file("E-CSV", path, message, line, "csv", "save the file as UTF-8")
            )
            return
        out.bytes, cut = lines.bytes, lines.cut
    if found is None:
        return
    names, cells = found
    if cut:
        out.capped = True
        if cells and len(cells) < limit:
            cells.pop()  # the cap may have cut it
    _typed_rows(out, names, cells)


def _first_bad_line(path: Path) -> tuple[int | None, str]:
    """The first line of `path` that is not UTF-8, and why (read line by line, bounded)."""
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return number, f"{exc.reason} at column {exc.start + 1}"
    return None, "a character cut across lines"


def _csv_records(
    path: Path, out: BuilderRows, limit: int, lines: _CappedLines
) -> tuple[list[str], list[tuple[int, list[str]]]] | None:
    """(column names, (line, record) of the first `limit` records), or None with the finding."""
    reader = csv.reader(lines)
    names: list[str] = []
    cells: list[tuple[int, list[str]]] = []
    try:
        header = next(reader, None)
        while header is not None and not any(header):
            header = next(reader, None)
        if header is None:
            fix = "write a header row naming the columns"
            message = "no header row (the file is empty)"
            out.findings.append(bad_file("E-CSV", path, message, None, "csv", fix))
            return None
        names = _column_names(header)
        start = reader.line_num + 1
        for record in reader:
            line, start = start, reader.line_num + 1
            if not record or (len(record) == 1 and not record[0]):
                continue  # pandas skips blank lines
            if len(record) > len(names):
                message = f"row has {len(record)} fields, the header {len(names)}"
                fix = "quote fields that hold commas, or fix the row's field count"
                out.findings.append(bad_file("E-CSV", path, message, line, "csv", fix))
                return None
            cells.append((line, record))
            if len(cells) >= limit:
                out.capped = True
                break
    except csv.Error as exc:
        if lines.cut and names:  # the cap cut a quoted field: judge the records before it
            return names, cells
        fix = "close the quoted field"
        out.findings.append(bad_file("E-CSV", path, str(exc), reader.line_num, "csv", fix))
        return None
    return names, cells


def _typed_rows(out: BuilderRows, names: list[str], cells: list[tuple[int, list[str]]]) -> None:
    """The records as rows, each column typed as pandas types it (infer_column)."""
    columns = [[rec[i] if i < len(rec) else None for _, rec in cells] for i in range(len(names))]
    out.types = {n: infer_column(col) for n, col in zip(names, columns, strict=True)}
    for number, (line, rec) in enumerate(cells, 1):
        row = {
            n: typed(rec[i] if i < len(rec) else None, out.types[n]) for i, n in enumerate(names)
        }
        out.rows.append((line, number, row))


def _column_names(header: list[str]) -> list[str]:
    """pandas' names: an empty one is `Unnamed: i`, a repeated one gets `.1`, `.2`..."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(header):
        name = raw or f"Unnamed: {i}"
        if name in seen:
            seen[name] += 1
            name = f"{name}.{seen[name]}"
        seen.setdefault(name, 0)
        names.append(name)
    return names


def _lines(path: Path, out: BuilderRows, limit: int) -> None:
    data = _head(path, out)
    text = data.decode("utf-8", errors="replace")
    for number, piece in enumerate(text.splitlines()[:limit], 1):
        out.rows.append((number, number, {"text": piece}))


def _columnar(path: Path, out: BuilderRows, builder: str, limit: int) -> None:
    from importlib.util import find_spec

    if find_spec("pyarrow") is None:
        out.findings.append(
            Finding(
                UNCHECKED,
                f"the rows of this {builder.capitalize()} file were not checked: reading "
                "them needs pyarrow, which is not installed here",
                str(path),
                fix="pip install 'nemo-rl-steps[parquet]' to check them",
                severity=WARNING,
            )
        )
        return
    from catalog.contracts.columnar import arrow_batches, parquet_batches

    batches: Iterator[list] = (
        parquet_batches(path, 1024) if builder == "parquet" else arrow_batches(path)
    )
    number = 0
    for batch in batches:
        for row in batch:
            number += 1
            out.rows.append((None, number, row))
            if number >= limit:
                out.capped = True
                return
