"""The sha256 of a file, read in fixed blocks (flat memory whatever the size)."""

from __future__ import annotations

import hashlib
import os

BLOCK = 1 << 20


def file_sha256(path: str | os.PathLike[str]) -> str:
    sha = hashlib.sha256()
    block = bytearray(BLOCK)
    view = memoryview(block)
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(block):
            sha.update(view[:n])
    return sha.hexdigest()
