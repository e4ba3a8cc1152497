"""Results computed from a file's bytes, kept per process: `check`, `plan` and the tests read
codes.toml, types.toml and every step.toml many times, and parsing them is most of the work.

The key holds the content itself (with whatever else the result depends on), so an edit is a
miss even within one mtime tick and a file that is written back as it was is a hit. A value is
kept pickled and every hit is unpickled afresh: callers may mutate what they get. The memo is
bounded in entries and in bytes; the least recently used entry leaves first.
"""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")


class ContentMemo:
    """`get(key, make)`: `make()`'s result for `key`, computed once while it stays kept."""

    def __init__(self, max_entries: int = 256, max_bytes: int = 32 << 20) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._kept: OrderedDict[Hashable, tuple[bytes, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], T], size: int = 0) -> T:
        """`size` is what the key holds beyond the pickled value (the content's length)."""
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None:
                self._kept.move_to_end(key)
                return pickle.loads(hit[0])
        value = make()  # an exception propagates and keeps nothing
        try:
            blob = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            return value
        cost = len(blob) + size
        if cost > self.max_bytes // 4:
            return value
        with self._lock:
            old = self._kept.pop(key, None)
            self._bytes -= old[1] if old else 0
            self._kept[key] = (blob, cost)
            self._bytes += cost
            while len(self._kept) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, gone) = self._kept.popitem(last=False)
                self._bytes -= gone
        return value

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)
