"""Parquet and Arrow input files as batches of JSON-ready rows; a damaged file is one finding.

pyarrow fails on a damaged file in many ways (ArrowInvalid for a cut file, OSError for a bad
page, UnicodeDecodeError for a string page with bad bytes, NotImplementedError for a type it
cannot read); each becomes one E-PARQUET or E-ARROW finding (exit 1) naming the file and, for
Parquet, the row group and the column. Values JSON has no form for get one, so every row can be
written as JSON: bytes that are UTF-8 text become that text (many writers store strings as
plain binary), other bytes become base64 (lossless; the encoding JSON mappings such as
protobuf's use for bytes); dates and times become ISO 8601 text and anything else (decimals,
durations) its exact text. NaN stays NaN, as in a JSONL row.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from catalog.errors import StepsError

SCHEMA_DEPTH = 512  # pyarrow 26's default, 100, refuses real nested data; deeper rows would not
# survive Python's recursion limit in json.dumps anyway (pyarrow 25 and older have no such limit,
# nor the keyword, and 26 needs Python 3.11+)
MAX_COLUMNS_TRIED = 256  # columns read one by one to name the damaged one
_JSONL_START = (b"{", b"[")


def _pyarrow(what: str, extra: str, path: Path) -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet  # pa.parquet below
    except ImportError:
        raise StepsError(
            "E-BLEND",
            f"reading {what} needs pyarrow, which is not installed",
            path=str(path),
            fix=f"pip install 'nemo-rl-steps[{extra}]' (or pip install pyarrow)",
        ) from None
    return pa


@cache
def _depth_limit(parquet_file: Any) -> dict[str, int]:
    """The schema depth keyword for pyarrow's ParquetFile, where it has one."""
    known = inspect.signature(parquet_file).parameters
    return {"schema_depth_limit": SCHEMA_DEPTH} if "schema_depth_limit" in known else {}


def _errors(pa: Any) -> tuple[type[BaseException], ...]:
    return (pa.ArrowException, OSError, ValueError, NotImplementedError)


def _plain(pa: Any, t: Any) -> bool:
    """Whether every value of type `t` comes out of `to_pylist` as a JSON value already."""
    types = pa.types
    if types.is_struct(t):
        return all(_plain(pa, t.field(i).type) for i in range(t.num_fields))
    lists = (types.is_list, types.is_large_list, types.is_fixed_size_list, types.is_dictionary)
    if any(f(t) for f in lists):
        return _plain(pa, t.value_type)
    if types.is_map(t):
        return _plain(pa, t.key_type) and _plain(pa, t.item_type)
    scalar = (types.is_null, types.is_boolean, types.is_integer, types.is_string)
    if any(f(t) for f in scalar) or types.is_large_string(t):
        return True
    return types.is_floating(t) and not types.is_float16(t)


def jsonable(value: Any) -> Any:
    """`value` with every part JSON has no form for given one (see the module docstring)."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(value).decode("ascii")
    iso = getattr(value, "isoformat", None)
    return iso() if callable(iso) else str(value)


def _damaged(code: str, path: Path, exc: BaseException, where: str = "") -> StepsError:
    what = "Parquet" if code == "E-PARQUET" else "Arrow"
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "too deeply nested" in reason:
        reason = f"its schema is nested deeper than {SCHEMA_DEPTH} levels"
    fix = f"write the file again as {what}, or drop it from the dataset's path"
    try:
        with open(path, "rb") as fh:
            if fh.read(1) in _JSONL_START:
                fix = f"it starts like JSON: if it is JSON Lines, name it .jsonl ({fix})"
    except OSError:
        pass
    return StepsError(
        code, f"cannot read this {what} file{where}: {reason}", path=str(path), fix=fix
    )


def _bad_column(pa: Any, pf: Any, group: int) -> str:
    """Which column of a row group fails to read (tried one by one), as ', column `x`'."""
    for name in pf.schema_arrow.names[:MAX_COLUMNS_TRIED]:
        try:
            pf.read_row_group(group, columns=[name]).to_pylist()
        except _errors(pa):
            return f", column `{name}`"
    return ""


def parquet_batches(path: Path, batch_rows: int) -> Iterator[list]:
    """The rows of a Parquet file, `batch_rows` at a time, one row group after another."""
    pa = _pyarrow("Parquet", "parquet", path)
    errors = _errors(pa)
    try:
        pf = pa.parquet.ParquetFile(path, **_depth_limit(pa.parquet.ParquetFile))
        plain = _plain(pa, pa.struct(list(pf.schema_arrow)))
    except errors as exc:
        raise _damaged("E-PARQUET", path, exc) from None
    for group in range(pf.num_row_groups):
        try:
            for batch in pf.iter_batches(batch_size=batch_rows, row_groups=[group]):
                rows = batch.to_pylist()
                yield rows if plain else [jsonable(r) for r in rows]
        except errors as exc:
            where = f" (row group {group}{_bad_column(pa, pf, group)})"
            raise _damaged("E-PARQUET", path, exc, where) from None


def arrow_batches(path: Path) -> Iterator[list]:
    """The rows of an Arrow IPC file or stream (a `save_to_disk` shard), one batch at a time."""
    pa = _pyarrow("Arrow files", "hf", path)
    done = 0
    try:
        with pa.memory_map(str(path)) as source:
            try:
                reader = pa.ipc.open_stream(source)
                schema, batches = reader.schema, iter(reader)
            except pa.ArrowInvalid:
                source.seek(0)
                reader = pa.ipc.open_file(source)
                schema = reader.schema
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            plain = _plain(pa, pa.struct(list(schema)))
            for batch in batches:
                rows = batch.to_pylist()
                yield rows if plain else [jsonable(r) for r in rows]
                done += 1
    except _errors(pa) as exc:
        where = f" (record batch {done + 1})" if done else ""
        raise _damaged("E-ARROW", path, exc, where) from None
