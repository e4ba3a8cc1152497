"""Results computed from content, kept per process and handed out as fresh copies: `check`,
`plan` and the tests parse codes.toml, types.toml, manifests and configs many times. The one
engine behind every such cache.

The key holds the content itself, so an edit is a miss even within one mtime tick. What is kept
is pristine: pickled and unpickled afresh per hit, or copied by a `copy` strategy (`SHARED`:
the value itself, for callers that only read). `seen_twice=True` keeps a value only when its
key comes again, so a one-shot command copies nothing. Bounded in entries and bytes (LRU; a
value over a quarter of the bytes is never kept).
"""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


def SHARED(value: T) -> T:
    """The copy strategy of values nobody mutates: the kept value itself."""
    return value


class ContentMemo:
    """`get(key, make)`: `make()`'s result for `key`, computed once while it stays kept."""

    def __init__(
        self,
        max_entries: int = 256,
        max_bytes: int = 32 << 20,
        copy: Callable[[Any], Any] | None = None,
        seen_twice: bool = False,
    ) -> None:
        """`copy`: how a kept value is copied (None: pickled once, unpickled per hit)."""
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.copy, self.seen_twice = copy, seen_twice
        self._kept: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._seen: set[Hashable] = set()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(
        self,
        key: Hashable,
        make: Callable[[], T],
        size: int | Callable[[T], int] = 0,
        valid: Callable[[T], bool] | None = None,
    ) -> T:
        """`size` is what the key holds beyond a pickled value (the content's length), or how
        to weigh the value; a kept value that `valid` refuses (it rests on more than the key)
        is made again."""
        hit = self._lookup(key, valid)
        if hit is not None:
            return hit[0]
        value = make()  # an exception propagates and keeps nothing
        self._put(key, value, size(value) if callable(size) else size)
        return value

    def _lookup(self, key: Hashable, valid: Callable[[T], bool] | None) -> tuple[T] | None:
        with self._lock:
            hit = self._kept.get(key)
            if hit is None:
                return None
            self._kept.move_to_end(key)
        # the kept value is never mutated, only replaced: copying it needs no lock
        if self.copy is None:
            value = pickle.loads(hit[0])
            return (value,) if valid is None or valid(value) else None
        if valid is not None and not valid(hit[0]):
            return None
        return (self.copy(hit[0]),)

    def _put(self, key: Hashable, value: Any, size: int) -> None:
        if self.seen_twice and not self._second_sight(key):
            return
        if self.copy is None:
            try:
                kept: Any = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
            except (pickle.PicklingError, TypeError, AttributeError):
                return
            cost = len(kept) + size
            if cost > self.max_bytes // 4:
                return
        else:
            if size > self.max_bytes // 4:
                return
            kept, cost = self.copy(value), size
        with self._lock:
            old = self._kept.pop(key, None)
            self._bytes -= old[1] if old else 0
            self._kept[key] = (kept, cost)
            self._bytes += cost
            while len(self._kept) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, gone) = self._kept.popitem(last=False)
                self._bytes -= gone

    def _second_sight(self, key: Hashable) -> bool:
        with self._lock:
            if key in self._seen:
                return True
            if len(self._seen) >= 8 * self.max_entries:
                self._seen.clear()
            self._seen.add(key)
            return False

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._seen.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)
