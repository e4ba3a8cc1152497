"""What a row contract returns, and how its violations become findings: one per cause.

A row contract is a plain function `check(row) -> list[RowViolation]` (empty when the row is
good). No pydantic on this path: it runs once per row of files with millions of rows.

A cause is a violation's code, field (list indexes folded: `input[3]` and `input[7]` are one
field), message and fix. Each keeps its count, the files it occurs in and its first locations;
a cause seen once reads as the row's own finding, one seen N times as "N rows in M files: ...;
first at a.jsonl:3, b.jsonl:5, ...". Causes are bounded (MAX_CAUSES): past that, a violation of
a new cause is only counted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from catalog.errors import ERROR, Finding


@dataclass(frozen=True)
class RowViolation:
    """One broken rule of one row: `field` is a dotted path inside the row (`a.b[2].c`). A
    WARNING is data quality the trainer accepts: the row is counted and reported, never refused."""

    code: str
    field: str
    message: str
    fix: str | None = None
    severity: str = ERROR

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR


def add(
    code: str,
    out: list[RowViolation],
    field: str,
    message: str,
    fix: str | None = None,
    severity: str = ERROR,
) -> None:
    """Append one violation to `out`; a contract binds its code once (`partial(add, CODE)`)."""
    out.append(RowViolation(code, field, message, fix, severity))


RowCheck = Callable[[Any], "list[RowViolation]"]

# Python type -> its JSON name; bool before int, as a bool is an int.
_JSON_NAMES = (
    (type(None), "null"),
    (bool, "boolean"),
    (str, "string"),
    ((int, float), "number"),
    (list, "array"),
    (dict, "object"),
)


def type_name(value: Any) -> str:
    """The JSON name of a Python value's type, for messages."""
    return next((name for t, name in _JSON_NAMES if isinstance(value, t)), type(value).__name__)


def is_blank(value: Any) -> bool:
    """An empty or whitespace-only string (what a trainer would learn nothing from)."""
    return type(value) is str and (not value or value.isspace())


MAX_CAUSES = 1000
FIRST_SHOWN = 3
_INDEX = re.compile(r"\[\d+\]")


@lru_cache(maxsize=4096)
def _folded(name: str) -> str:
    return _INDEX.sub("[]", name) if "[" in name else name


@dataclass
class Cause:
    """One cause and where it occurs: `files` in first-seen order, `first` the first
    FIRST_SHOWN (path, line) locations."""

    violation: RowViolation
    count: int = 0
    files: dict[str, None] = field(default_factory=dict)
    first: list[tuple[str, int]] = field(default_factory=list)

    def seen(self, where: str, line: int) -> None:
        self.count += 1
        self.files[where] = None
        if len(self.first) < FIRST_SHOWN:
            self.first.append((where, line))

    def finding(self) -> Finding:
        v = self.violation
        what = f"{v.field}: {v.message}" if v.field else v.message
        path, line = self.first[0]
        if self.count > 1:
            places = len(self.files)
            where = f" in {places} files" if places > 1 else ""
            locs = ", ".join(
                f"{os.path.basename(p)}:{n}" if places > 1 else str(n) for p, n in self.first
            )
            more = ", ..." if self.count > len(self.first) else ""
            first = f"first at {locs}{more}" if places > 1 else f"first at lines {locs}{more}"
            what = f"{self.count} rows{where}: {what}; {first}"
        end = "" if what.endswith("...") else "."
        return Finding(
            v.code, f"{what}{end}", path, line, fix=v.fix, severity=v.severity, key=v.field or None
        )


@dataclass
class Causes:
    """The causes of one scan, in first-seen order; `dropped` counts violations of causes
    past MAX_CAUSES (each is then one error, or warning, of its own). A cause keeps its
    violation's severity: a warning cause is counted as one warning, never as an error."""

    by_key: dict[tuple, Cause] = field(default_factory=dict)
    dropped: int = 0

    def add(self, v: RowViolation, where: str, line: int) -> bool:
        """Record one violation; True when it is an error or warning not counted before (a
        new cause, or one past the bound)."""
        key = (v.code, _folded(v.field), v.message, v.fix, v.severity)
        cause = self.by_key.get(key)
        if cause is None:
            if len(self.by_key) >= MAX_CAUSES:
                self.dropped += 1
                return True
            cause = self.by_key[key] = Cause(v)
            cause.seen(where, line)
            return True
        cause.seen(where, line)
        return False

    def merge(self, other: Causes, line_offset: int = 0) -> tuple[int, int]:
        """Take `other`'s causes (its lines shifted by `line_offset`); how many of its error
        and warning causes were already known here (counted twice until subtracted)."""
        known = [0, 0]
        self.dropped += other.dropped
        for key, theirs in other.by_key.items():
            mine = self.by_key.get(key)
            if mine is None:
                mine = self.by_key[key] = Cause(theirs.violation)
            else:
                known[0 if theirs.violation.is_error else 1] += 1
            mine.count += theirs.count
            mine.files.update(theirs.files)
            room = FIRST_SHOWN - len(mine.first)
            mine.first += [(p, n + line_offset) for p, n in theirs.first[:room]]
        return known[0], known[1]

    def findings(self) -> list[Finding]:
        return [c.finding() for c in self.by_key.values()]
