"""Split writers: rows go to `split/shard_NNNNNN.jsonl`, a new shard once the size is reached.

Rows are never cut across shards. Rows arrive as views (or bytes) and are queued; `flush` writes
them with one `writev` per shard, never joined in Python. A finished shard goes to `on_shard`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

IOV_MAX = 1024  # buffers per writev (the POSIX minimum of IOV_MAX is 16, Linux has 1024)


ShardDone = Callable[[str], Callable[[], dict]]  # shard path -> a call returning its digests


class SplitWriter:
    """Writes one split's shards under `root/name/` and records each shard for the manifest."""

    def __init__(self, root: Path, name: str, shard_size: int, on_shard: ShardDone) -> None:
        self.root = root
        self.name = name
        self.shard_size = shard_size
        self.on_shard = on_shard
        self.shards: list[dict] = []
        self.digests: list[Callable[[], dict]] = []
        self.rows = 0
        self._fd = -1
        self._queue: list[bytes | memoryview] = []
        self._shard_bytes = 0
        self._shard_rows = 0

    def write(self, data: bytes | memoryview, rows: int = 1) -> None:
        """Queue `rows` whole rows (each ending in a newline); `data` must stay unchanged until
        the next `flush`."""
        if self._fd < 0:
            self._roll()
        if self._shard_bytes + len(data) <= self.shard_size:
            self._queue.append(data)
            self._count(len(data), rows)
        else:
            self._write_cut(bytes(data))

    def _count(self, size: int, rows: int) -> None:
        self._shard_bytes += size
        self._shard_rows += rows
        self.rows += rows

    def _write_cut(self, data: bytes) -> None:
        """Queue rows that cross the shard size, cutting between rows into new shards."""
        pos = 0
        while pos < len(data):
            room = self.shard_size - self._shard_bytes
            cut = data.rfind(b"\n", pos, pos + room) + 1
            if cut <= pos:  # not even one row fits
                if self._shard_rows:
                    self._roll()
                    continue
                cut = data.index(b"\n", pos) + 1  # an empty shard takes one row of any size
            piece = data[pos:cut]
            self._queue.append(piece)
            self._count(len(piece), piece.count(b"\n"))
            pos = cut
            if pos < len(data):
                self._roll()

    def flush(self) -> None:
        """Write what is queued."""
        queue = self._queue
        for i in range(0, len(queue), IOV_MAX):
            batch = queue[i : i + IOV_MAX]
            done = os.writev(self._fd, batch)
            if done < sum(map(len, batch)):  # a short write (rare): finish it plainly
                rest = memoryview(b"".join(batch))[done:]
                while len(rest):
                    rest = rest[os.write(self._fd, rest) :]
        queue.clear()

    def _finish_shard(self) -> None:
        if self._fd < 0:
            return
        self.flush()
        os.close(self._fd)
        self._fd = -1
        self.shards[-1].update(rows=self._shard_rows, bytes=self._shard_bytes)
        self.digests.append(self.on_shard(str(self.root / self.shards[-1]["path"])))

    def _roll(self) -> None:
        self._finish_shard()
        rel = f"{self.name}/shard_{len(self.shards):06d}.jsonl"
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._shard_bytes = 0
        self._shard_rows = 0
        self.shards.append({"path": rel})

    def close(self) -> dict:
        """Finish the last shard and wait for every shard's digests; the split's manifest entry."""
        self._finish_shard()
        for shard, digest in zip(self.shards, self.digests, strict=True):
            shard.update(digest())
        return {
            "rows": self.rows,
            "bytes": sum(s["bytes"] for s in self.shards),
            "shards": self.shards,
        }

    def abort(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
