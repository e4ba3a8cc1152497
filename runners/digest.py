"""File digests, and a memo that makes a file's content digest cost one `stat` while unchanged.

The memo maps (device, inode, size, mtime_ns, ctime_ns) to the file's xxh3_128: the kernel sets
ctime on every write and nothing (`touch -d`, `cp -p`, `rsync -a`) can set it back, so an edit
always misses the memo. It lives in the user's cache folder; one that cannot be read or written
is only slower.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from catalog.atomic_write import write_atomic
from catalog.file_digest import SHA256, XXH3, file_digests
from catalog.record_file import read_json

DIGEST = "xxh3_128"  # the name a content digest carries: "xxh3_128:<hex>"
MAX_ENTRIES = 50_000  # about 5 MB of memo; the least recently used entries go first
SETTLED_NS = 2_000_000_000  # a file changed this recently may still be written: not memoized


def file_sha256(path: str | os.PathLike[str]) -> str:
    return file_digests(path, (SHA256,))[SHA256]


def memo_file(env: Mapping[str, str] | None = None) -> Path:
    """`$STEPS_CACHE_DIR` (else `$XDG_CACHE_HOME`, else ~/.cache) `/nemo-rl-steps/digests.json`."""
    from catalog.discovery import cache_home

    return cache_home(env, "digests.json")


def _stat_key(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


class DigestMemo:
    """xxh3_128 of files, read again only when their stat says they may have changed."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else memo_file()
        self.entries: dict[str, str] = {}
        self.changed = False
        with contextlib.suppress(OSError, ValueError):  # no memo yet, or a damaged one: slower
            data = read_json(self.path)
            if isinstance(data, dict):
                self.entries = {k: v for k, v in data.items() if isinstance(v, str)}

    def digest(self, path: str | os.PathLike[str]) -> str:
        """The file's xxh3_128: from the memo while its stat is unchanged, else read."""
        key = _stat_key(os.stat(path))
        known = self.entries.pop(key, None)
        if known is None:
            known = file_digests(path, (XXH3,))[XXH3]
            after = os.stat(path)
            if _stat_key(after) != key or time.time_ns() - after.st_ctime_ns < SETTLED_NS:
                return known
            self.changed = True
        self.entries[key] = known  # most recently used last
        return known

    def remember(self, path: str | os.PathLike[str], digest: str) -> None:
        """Record the digest of a file this process wrote and no one else writes."""
        self.entries[_stat_key(os.stat(path))] = digest
        self.changed = True

    def save(self) -> None:
        if not self.changed:
            return
        keep = dict(list(self.entries.items())[-MAX_ENTRIES:])
        with contextlib.suppress(OSError):
            write_atomic(self.path, json.dumps(keep, separators=(",", ":")) + "\n")
        self.changed = False


def content_digest(path: Path, memo: DigestMemo) -> tuple[str, int, int]:
    """(digest, files, bytes) of a file or folder; unchanged files cost one stat."""
    if path.is_file():
        return f"{DIGEST}:{memo.digest(path)}", 1, path.stat().st_size
    h = hashlib.sha256()
    files = total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath, name)
            if not p.is_file():
                continue
            h.update(f"{p.relative_to(path).as_posix()}\0{memo.digest(p)}\n".encode())
            files, total = files + 1, total + p.stat().st_size
    return f"{DIGEST}:{h.hexdigest()[:32]}", files, total
