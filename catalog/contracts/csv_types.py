"""CSV cells typed as the Hugging Face csv builder types them: pandas' `read_csv` inference.

`datasets` reads a CSV with pandas in 10,000-row chunks and gives every later chunk the first
chunk's column types. pandas makes a column int when every value is an integer (within int64,
or uint64 for large non-negative ones), float when one is a decimal or an empty cell sits among
numbers, bool when every value is a true/false word, else text; its NA words read as null.
Checked against datasets 4.8.5 and pandas 2.3.3 (NeMo-RL v0.7.0's lock).
"""

from __future__ import annotations

import re
from typing import Any

# pandas' default NA strings (pandas/_libs/parsers.pyx STR_NA_VALUES)
NA_WORDS = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
     "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}
)  # fmt: skip
_INT = re.compile(r"\s*[-+]?\d+\s*\Z")
_FLOAT = re.compile(
    r"\s*[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|(?i:inf|infinity))\s*\Z"
)
INT_RANGE = (-(1 << 63), (1 << 64) - 1)  # int64, or uint64 for large non-negative values
_TRUE, _FALSE = frozenset({"True", "TRUE", "true"}), frozenset({"False", "FALSE", "false"})


def infer_column(values: list[str | None]) -> str:
    """The type pandas' `read_csv` gives a column of raw cells (None: a missing cell)."""
    present = [v for v in values if v is not None and v not in NA_WORDS]
    if not present:
        return "float" if values else "str"  # an all-NA column is float64 of NaN
    missing = len(present) < len(values)
    if all(_INT.match(v) for v in present):
        low, high = INT_RANGE
        if all(low <= int(v) <= high for v in present):
            return "float" if missing else "int"
        return "str"  # past uint64: pandas keeps the text
    if all(_FLOAT.match(v) for v in present):
        return "float"
    if all(v in _TRUE or v in _FALSE for v in present):
        return "bool"  # with NA cells: bools and nulls
    return "str"


def cast(value: str | None, kind: str) -> Any:
    """One cell as the builder yields it: NA cells are null, and so is a later row's cell that
    does not fit the type the first rows gave its column (`unfit` names it)."""
    if value is None or value in NA_WORDS:
        return None
    try:
        if kind == "int":
            number = float(value) if not _INT.match(value) else int(value)
            return int(number) if not isinstance(number, float) or number.is_integer() else None
        if kind == "float":
            return float(value)
    except (ValueError, OverflowError):
        return None
    return value in _TRUE if kind == "bool" else value


def unfit(row: dict, cells: list[str | None], names: list[str]) -> str | None:
    """The first column whose non-NA cell came out null: it did not fit the column's type."""
    for name, cell in zip(names, cells, strict=True):
        if row[name] is None and cell is not None and cell not in NA_WORDS:
            return name
    return None


def column_names(header: list[str]) -> list[str]:
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
