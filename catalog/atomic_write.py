"""Write a file whole or not at all (a temp file in the same folder, then `os.replace`): a
reader never sees half a file, and a failed write leaves no temp file behind."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def _temp_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


@contextmanager
def open_atomic(path: str | Path, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """A file handle whose content replaces `path` when the block ends without an exception."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_for(path)
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
    try:
        with open(tmp, mode, **kwargs) as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Replace `path` with `data` (text is written as UTF-8 with `\\n` line ends)."""
    if isinstance(data, bytes):
        with open_atomic(path, "wb") as fh:
            fh.write(data)
    else:
        with open_atomic(path, "w", newline="\n") as fh:
            fh.write(data)
