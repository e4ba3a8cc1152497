"""Split writers: rows go to `split/shard_NNNNNN.jsonl`, a new shard once the size is reached.

Rows are never cut across shards. Rows kept as they are arrive as byte ranges of the source
file and are copied by the kernel (`copy_file_range`), never through Python; re-serialized rows
arrive as bytes. A finished shard is handed to `on_shard` (rl_prep hashes it in a worker while
the next one is written), so the manifest needs no extra pass at the end.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from collections.abc import Callable
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
FLUSH_BYTES = 1 << 20
HASH_BLOCK = 1 << 20
# copy_file_range refuses some pairs (old kernels across filesystems, some network mounts)
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP}


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


def file_sha256(path: str) -> str:
    """The sha256 of a file, read in fixed blocks (flat memory)."""
    sha = hashlib.sha256()
    block = bytearray(HASH_BLOCK)
    view = memoryview(block)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(block):
            sha.update(view[:n])
    return sha.hexdigest()


def copy_range(src: int, dst: int, offset: int, count: int) -> None:
    """Append `count` bytes of file `src` from `offset` to `dst`, in the kernel when it can."""
    end = offset + count
    if hasattr(os, "copy_file_range"):
        try:
            while offset < end:
                done = os.copy_file_range(src, dst, end - offset, offset)
                if done == 0:
                    break
                offset += done
        except OSError as exc:
            if exc.errno not in _NO_KERNEL_COPY:
                raise
    while offset < end:
        data = os.pread(src, min(end - offset, HASH_BLOCK), offset)
        if not data:
            raise OSError(errno.EIO, f"input ended {end - offset} bytes early while copying")
        os.write(dst, data)
        offset += len(data)
    if offset != end:
        raise OSError(errno.EIO, "input ended early while copying (was it truncated?)")


ShardDone = Callable[[str], Callable[[], str]]  # shard path -> a call returning its sha256


class SplitWriter:
    """Writes one split's shards under `root/name/` and records each shard for the manifest."""

    def __init__(self, root: Path, name: str, shard_size: int, on_shard: ShardDone) -> None:
        self.root = root
        self.name = name
        self.shard_size = shard_size
        self.on_shard = on_shard
        self.shards: list[dict] = []
        self.digests: list[Callable[[], str]] = []
        self.rows = 0
        self._fd = -1
        self._buf: list[bytes] = []
        self._buf_bytes = 0
        self._shard_bytes = 0
        self._shard_rows = 0

    def write(self, data: bytes, rows: int = 1) -> None:
        """Append `rows` whole rows given as bytes (each ending in a newline)."""
        if self._fits(len(data)):
            self._buf.append(data)
            self._buf_bytes += len(data)
            self._count(len(data), rows)
            if self._buf_bytes >= FLUSH_BYTES:
                self._flush()
            return
        self._write_cut(data)

    def copy(self, src: int, start: int, stop: int, rows: int) -> None:
        """Append `rows` whole rows that are bytes [start, stop) of the open file `src`."""
        if not self._fits(stop - start):
            self._write_cut(os.pread(src, stop - start, start))
            return
        self._flush()
        copy_range(src, self._fd, start, stop - start)
        self._count(stop - start, rows)

    def _fits(self, size: int) -> bool:
        if self._fd < 0:
            self._roll()
        return self._shard_bytes + size <= self.shard_size

    def _count(self, size: int, rows: int) -> None:
        self._shard_bytes += size
        self._shard_rows += rows
        self.rows += rows

    def _write_cut(self, data: bytes) -> None:
        """Append rows that cross the shard size, cutting between rows into new shards."""
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
            self._buf.append(piece)
            self._buf_bytes += len(piece)
            self._count(len(piece), piece.count(b"\n"))
            pos = cut
            if pos < len(data):
                self._roll()
        self._flush()

    def _flush(self) -> None:
        if self._buf:
            data = b"".join(self._buf)
            view = memoryview(data)
            written = 0
            while written < len(data):
                written += os.write(self._fd, view[written:])
            self._buf.clear()
            self._buf_bytes = 0

    def _finish_shard(self) -> None:
        if self._fd < 0:
            return
        self._flush()
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
        """Finish the last shard and wait for every shard's sha256; the split's manifest entry."""
        self._finish_shard()
        for shard, digest in zip(self.shards, self.digests, strict=True):
            shard["sha256"] = digest()
        return {
            "rows": self.rows,
            "bytes": sum(s["bytes"] for s in self.shards),
            "shards": self.shards,
        }

    def abort(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
