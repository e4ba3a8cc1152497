"""One compile per stage config in a pipeline run, and the count of compiles a process made.

A pipeline reads each stage's config three times (planner, cache key, checks; on a cluster
the checks compile for the profile's NeMo-RL, so two compiles). Under `compile_once()` the first
compile is kept and later requests get a copy while the files it read are unchanged
(tests/test_pipeline_run.py counts them). Imports nothing heavy: `pipeline run` enters it first.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import TypeVar

from catalog.content_memo import ContentMemo

T = TypeVar("T")

# Compiles this process made, per config file: what `compile_once` saves, for stats and tests.
COMPILES: Counter[str] = Counter()
_ONCE: ContentMemo | None = None  # set while `compile_once()` holds


@contextlib.contextmanager
def compile_once() -> Iterator[None]:
    """Within: a config compiled again from the same inputs is a copy of its first compile."""
    global _ONCE
    outer = _ONCE
    _ONCE = outer or ContentMemo(max_entries=256, max_bytes=256 << 20)
    try:
        yield
    finally:
        _ONCE = outer


def compiled_once(
    key: tuple[Hashable, ...],
    path: str | Path,
    build: Callable[[], T],
    watch: Callable[[T], list[Path]] = lambda c: [],
) -> T:
    """`build()`, a compile of `path` (`key` names all else it depends on), counted; under
    `compile_once` a copy of the kept one while its sources and `watch`'s files are unchanged."""

    def make() -> tuple[list[tuple[Path, bytes | None]], T]:
        COMPILES[str(path)] += 1
        compiled = build()
        files = dict.fromkeys([*getattr(compiled, "sources", []), *watch(compiled)])
        return [(p, read_content(p)) for p in files], compiled

    memo = _ONCE
    if memo is None:
        COMPILES[str(path)] += 1
        return build()
    kept = memo.get(
        (str(Path.cwd()), *key),
        make,
        size=lambda kept: sum(len(data or b"") for _, data in kept[0]),
        valid=lambda kept: all(read_content(p) == data for p, data in kept[0]),
    )
    return kept[1]


def read_content(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
