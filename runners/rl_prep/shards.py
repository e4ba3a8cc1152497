"""Split writers: rows go to `split/shard_NNNNNN.jsonl`, a new shard once the size is reached.

Rows are never cut across shards. Each shard's rows, bytes and sha256 are counted while it is
written, so the manifest needs no second pass over the output.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from catalog.errors import StepsError

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
FLUSH_BYTES = 4 << 20
VIEW_MIN_BYTES = 1 << 20  # ranges smaller than this are copied out of the chunk


def parse_size(value: Any, key: str = "shard_size") -> int:
    """`256MB`, `64KiB`, `1.5GB` or a plain byte count -> bytes (KB/MB/GB are powers of 1000)."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    m = _SIZE.match(str(value)) if isinstance(value, str) else None
    if m and m.group(2).lower() in _UNITS:
        size = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
        if size > 0:
            return size
    raise StepsError(
        "E-CONFIG-VALUE",
        f"{key}: expected a positive size such as 256MB, 64KiB or 1000000, got {value!r}",
        key=key,
        fix=f"set {key}=256MB (units: B, KB, MB, GB, KiB, MiB, GiB)",
    )


class SplitWriter:
    """Writes one split's shards under `root/name/` and records each shard for the manifest."""

    def __init__(self, root: Path, name: str, shard_size: int) -> None:
        self.root = root
        self.name = name
        self.shard_size = shard_size
        self.shards: list[dict] = []
        self.rows = 0
        self._fh: Any = None
        self._buf: list[bytes | memoryview] = []
        self._buf_bytes = 0
        self._shard_bytes = 0
        self._shard_rows = 0
        self._sha: Any = None

    def write(self, data: bytes, copies: int = 1) -> None:
        """Append a row (bytes ending in a newline) `copies` times."""
        for _ in range(copies):
            if self._fh is None or (
                self._shard_bytes and self._shard_bytes + len(data) > self.shard_size
            ):
                self._roll()
            self._append(data, 1)

    def write_parts(self, parts: list, lengths: list[int], source: bytes | None) -> None:
        """Append a chunk's rows for this split: each part is bytes, or a (start, stop) range
        of `source` (the chunk's bytes), with how many rows it holds."""
        view = memoryview(source) if source is not None else None
        i = 0
        for obj, n in parts:
            if type(obj) is tuple:
                blob = view[obj[0] : obj[1]]  # type: ignore[index]
                if len(blob) < VIEW_MIN_BYTES:  # a small view would pin the whole chunk
                    blob = bytes(blob)
            else:
                blob = obj
            self.write_blob(blob, lengths[i : i + n])
            i += n

    def write_blob(self, blob: bytes | memoryview, lengths: list[int]) -> None:
        """Append consecutive rows given as one blob and each row's length."""
        if not lengths:
            return
        if self._fh is not None and self._shard_bytes + len(blob) <= self.shard_size:
            self._append(blob, len(lengths))
            return
        view = memoryview(blob)
        start = end = rows = 0
        for n in lengths:
            if self._fh is None or (
                self._shard_bytes + (end - start)
                and self._shard_bytes + (end - start) + n > self.shard_size
            ):
                if rows:
                    self._append(bytes(view[start:end]), rows)
                start, rows = end, 0
                self._roll()
            end += n
            rows += 1
        self._append(bytes(view[start:end]), rows)

    def _append(self, data: bytes | memoryview, rows: int) -> None:
        self._buf.append(data)
        self._buf_bytes += len(data)
        self._shard_bytes += len(data)
        self._shard_rows += rows
        self.rows += rows
        if self._buf_bytes >= FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._buf:
            chunk = b"".join(self._buf)
            self._sha.update(chunk)
            self._fh.write(chunk)
            self._buf.clear()
            self._buf_bytes = 0

    def _finish_shard(self) -> None:
        if self._fh is None:
            return
        self._flush()
        self._fh.close()
        self.shards[-1].update(
            rows=self._shard_rows, bytes=self._shard_bytes, sha256=self._sha.hexdigest()
        )
        self._fh = None

    def _roll(self) -> None:
        self._finish_shard()
        rel = f"{self.name}/shard_{len(self.shards):06d}.jsonl"
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "wb")  # noqa: SIM115 - closed in _finish_shard
        self._sha = hashlib.sha256()
        self._shard_bytes = 0
        self._shard_rows = 0
        self.shards.append({"path": rel})

    def close(self) -> dict:
        """Finish the last shard; the split's manifest entry."""
        self._finish_shard()
        return {
            "rows": self.rows,
            "bytes": sum(s["bytes"] for s in self.shards),
            "shards": self.shards,
        }

    def abort(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
