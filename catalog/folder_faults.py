"""A folder we write that cannot take the write (full, read-only, not ours, `/proc`): the
machine's state, so a setup finding (exit 2) naming the folder, the cause and where to write
instead, never "a bug in steps". Folders a failed write created are removed again.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from catalog.errors import EXIT_USAGE, StepsError

NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
READ_ONLY = {errno.EROFS}
NOT_ALLOWED = {errno.EACCES, errno.EPERM}
NO_FILES_HERE = {errno.ENOENT, errno.ENOTDIR}
ANY_PATH = NO_SPACE | READ_ONLY  # a read never fails with these: always the write's fault


def mount_point(path: Path) -> Path:
    """The mount point of the filesystem holding `path` (or its nearest existing folder)."""
    path = existing_folder(path)
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def existing_folder(path: Path) -> Path:
    """`path` if it is a folder, else its nearest existing parent folder."""
    path = Path(os.path.abspath(path))
    while not path.is_dir() and path != path.parent:
        path = path.parent
    return path


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def write_fault(
    exc: OSError, root: Path, code: str, what: str, elsewhere: str
) -> StepsError | None:
    """The finding for `exc`, raised writing `what` under `root`, or None (a read error of an
    input, a bug); `elsewhere` names the setting that moves the write (`set output_dir`)."""
    name = Path(exc.filename) if exc.filename else None
    here = name is None or Path(os.path.abspath(name)).is_relative_to(os.path.abspath(root))
    if exc.errno not in ANY_PATH and not here:
        return None
    folder = existing_folder(name.parent if name is not None else root)
    if exc.errno in NO_SPACE:
        mount = mount_point(folder)
        try:
            st = os.statvfs(mount)
            room = f" (size {_size(st.f_blocks * st.f_frsize)})"
        except OSError:
            room = ""
        cause = "disk quota exceeded" if exc.errno == errno.EDQUOT else "no space left"
        message = f"{cause} on the filesystem at {mount}{room} while writing {what}"
        fix = f"free space on {mount}, or {elsewhere} to a folder on a filesystem with room"
    elif exc.errno in READ_ONLY:
        message = (
            f"{folder} is read-only (its filesystem at {mount_point(folder)} is mounted read-only)"
        )
        fix = f"{elsewhere} to a writable folder"
    elif exc.errno in NOT_ALLOWED:
        message = f"{folder} is not writable by this user (uid {os.getuid()}): cannot write {what}"
        fix = f"{elsewhere} to a folder you can write, or ask the owner of {folder} for access"
    elif exc.errno in NO_FILES_HERE:
        made = f"{Path(name).name}: " if name is not None else ""
        message = f"{folder} takes no new files ({made}{exc.strerror}): cannot write {what}"
        fix = f"{elsewhere} to a folder on a regular filesystem (not /proc, /sys or /dev)"
    else:
        return None
    return StepsError(code, message, path=str(root), fix=fix, exit_code=EXIT_USAGE)


def make_folders(path: Path) -> list[Path]:
    """`mkdir -p path`; returns the folders it created, deepest first (for `remove_made`)."""
    missing = []
    probe = Path(os.path.abspath(path))
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    path.mkdir(parents=True, exist_ok=True)
    return missing


def remove_made(folders: list[Path]) -> None:
    """Remove folders `make_folders` created, deepest first, if they are still empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


@contextmanager
def writing(root: Path, code: str, what: str, elsewhere: str) -> Iterator[list[Path]]:
    """Turn a write fault under `root` into its finding, removing the folders the caller made
    (it appends them to the yielded list)."""
    made: list[Path] = []
    try:
        yield made
    except OSError as exc:
        remove_made(made)
        fault = write_fault(exc, root, code, what, elsewhere)
        if fault is None:
            raise
        raise fault from None
