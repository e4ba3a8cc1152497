"""A blend dataset's `map`: row fields set from dotted source paths before the transform (see
steps/data_prep/rl_prep/README.md, "Mapping fields"); a row lacking one, or null there
(Parquet's missing struct field), is E-BLEND-MAP."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from runners.rl_prep.transforms import RowRejected

Path = tuple[str | int, ...]
_INDEX = re.compile(r"-?\d+")
_KEY = re.compile(r"[^.\s]+")


@lru_cache(maxsize=1024)
def parse_path(text: str, targets_only: bool = False) -> Path:
    """`a.0.b` -> ("a", 0, "b"); ValueError naming the problem for a path that is not one."""
    if not text or text != text.strip():
        raise ValueError(f"`{text}` is not a dotted path (empty, or spaces around it)")
    parts: list[str | int] = []
    for seg in text.split("."):
        if not _KEY.fullmatch(seg):
            raise ValueError(f"`{text}` has an empty or blank segment (write a.b.0.c)")
        if _INDEX.fullmatch(seg):
            if targets_only:
                raise ValueError(f"`{text}`: a target is made of field names, not list indexes")
            parts.append(int(seg))
        else:
            parts.append(seg)
    return tuple(parts)


def lookup(row: Any, path: Path) -> tuple[bool, Any, str]:
    """(found, value, where it stopped): `where` names the first missing segment when not found."""
    value = row
    for depth, seg in enumerate(path):
        if isinstance(seg, int):
            ok = isinstance(value, list) and -len(value) <= seg < len(value)
        else:
            ok = isinstance(value, dict) and seg in value
        if not ok:
            parent = ".".join(str(p) for p in path[:depth]) or "the row"
            kind = type(value).__name__ if value is not None else "null"
            what = f"index {seg}" if isinstance(seg, int) else f"key `{seg}`"
            return False, None, f"{parent} ({kind}) has no {what}"
        value = value[seg]
    return True, value, ""


def _put(row: dict, target: Path, value: Any) -> None:
    node = row
    for seg in target[:-1]:
        child = node.get(seg)  # type: ignore[call-overload]
        if not isinstance(child, dict):
            child = node[seg] = {}  # type: ignore[index]
        else:
            child = node[seg] = dict(child)  # type: ignore[index]  # never edit the source's
        node = child
    node[target[-1]] = value  # type: ignore[index]


def apply_map(row: dict, fields: tuple[tuple[str, str], ...]) -> dict:
    """A copy of `row` with every mapped field set from its source path (E-BLEND-MAP if absent)."""
    out = dict(row)
    for target, source in fields:
        found, value, where = lookup(row, parse_path(source))
        if found and value is None:  # Parquet has no "absent": a missing struct field is null
            found, where = False, f"{source} is null"
        if not found:
            raise RowRejected(
                "E-BLEND-MAP",
                target,
                f"maps from `{source}`, which this row lacks: {where}",
                f"fix `map: {{{target}: {source}}}` in the blend to a path every row has",
            )
        _put(out, parse_path(target, targets_only=True), value)
    return out
