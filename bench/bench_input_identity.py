"""Benchmark rl_prep's input identity: the old stat key against the content digest and its memo.

    .venv/bin/python bench/bench_input_identity.py --size-mb 1000   # a 1 GB file in bench/.data

Measured in one run on the same file: the old key (path, size, mtime: one stat); the new key on
a memo miss (xxh3_128 over the whole file, from the page cache and, where the kernel drops the
file's pages on request, from disk); the new key on a memo hit (one stat and a lookup: every
run after the first while the file is unchanged); and, for the shard check before reuse and
`validate`, sha256 of the same bytes. Prints each cost and its ratio to the old key.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_gym_rows import DATA_DIR

from catalog.file_digest import SHA256, XXH3, file_digests
from runners.digest import DigestMemo


def make_input(path: Path, size_mb: int) -> None:
    if path.is_file() and path.stat().st_size == size_mb << 20:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    block = os.urandom(1 << 20)
    with open(path, "wb") as fh:
        for _ in range(size_mb):
            fh.write(block)


def best_of(n: int, call) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return min(times)


def drop_pages(path: Path) -> bool:
    """Ask the kernel to forget the file's cached pages (so the next read is from disk)."""
    if not hasattr(os, "posix_fadvise"):
        return False
    os.sync()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1000)
    parser.add_argument("--data", default=str(DATA_DIR))
    args = parser.parse_args()
    path = Path(args.data) / f"identity-{args.size_mb}mb.bin"
    make_input(path, args.size_mb)

    def old_key():
        st = path.stat()
        return [str(path), st.st_size, st.st_mtime_ns]

    with tempfile.TemporaryDirectory() as tmp:
        memo = DigestMemo(Path(tmp) / "digests.json")
        old = best_of(1000, old_key)
        file_digests(path, (XXH3,))  # warm the page cache
        miss_hot = best_of(3, lambda: file_digests(path, (XXH3,)))
        cold = None
        if drop_pages(path):
            t = time.perf_counter()
            file_digests(path, (XXH3,))
            cold = time.perf_counter() - t
        sha_hot = best_of(3, lambda: file_digests(path, (SHA256,)))
        os.utime(path, ns=(time.time_ns() - 10**10, time.time_ns() - 10**10))  # settled
        memo.digest(path)
        hit = best_of(1000, lambda: memo.digest(path))

    size = path.stat().st_size
    print(f"input: {path} ({size / 1e9:.2f} GB)")
    print(f"old key (stat):                  {old * 1e6:10.1f} us")
    print(f"new key, memo hit (stat+lookup): {hit * 1e6:10.1f} us  ratio {hit / old:8.1f}x")
    print(
        f"new key, memo miss (xxh3, cached pages): {miss_hot:6.3f} s  ratio {miss_hot / old:10.0f}x"
        f"  ({size / miss_hot / 1e9:.1f} GB/s)"
    )
    if cold is not None:
        print(
            f"new key, memo miss (xxh3, from disk):  {cold:6.3f} s  ratio {cold / old:10.0f}x"
            f"  ({size / cold / 1e9:.1f} GB/s)"
        )
    rate = size / sha_hot / 1e9
    print(f"sha256 of the same bytes (cached pages): {sha_hot:6.3f} s  ({rate:.1f} GB/s)")


if __name__ == "__main__":
    main()
