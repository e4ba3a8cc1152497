"""Whether an input of `validate` can be read, and if not, why, without consuming it.

A permission problem names the folder that stops this user (a file in an unsearchable folder
is not "missing"). A device or a named pipe is never opened: reading a device never ends, and a
named pipe waits for a writer that may never come (a probe's open and close would also take a
writer's data). A stream this process already holds (`<(command)` as /dev/fd/N, a pipe on
/dev/stdin) is not opened here either: the scan is its one reader.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from catalog.errors import EXIT_USAGE, StepsError

DENIED_FIX = "make it readable (chmod u+rx on folders, u+r on files) or run as its owner"


def denied_folder(path: Path) -> Path:
    """The first folder on the way to `path` this user may not search, or `path` itself."""
    path = Path(os.path.abspath(path))
    for step in [*reversed(path.parents), path][1:]:
        try:
            os.lstat(step)
        except PermissionError:
            return step.parent
        except OSError:
            break
    return path


def _owner(path: Path) -> str:
    try:
        import pwd

        return pwd.getpwuid(os.stat(path).st_uid).pw_name
    except (OSError, KeyError, ImportError):
        return ""


def denied(path: Path, folder: Path | None = None) -> StepsError:
    """The setup error for a permission refused on `path` (exit 2), naming the folder."""
    folder = folder if folder is not None else denied_folder(path)
    owner = _owner(folder)
    said = f"cannot read the input: permission denied on {folder}"
    fix = DENIED_FIX + (f" ({owner})" if owner else "")
    return StepsError("E-INPUT-UNREADABLE", said, path=str(path), fix=fix, exit_code=EXIT_USAGE)


def stat_problem(path: Path) -> str | None:
    """Why `path` cannot be reached (missing, a symlink loop, no permission), or None."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop"
        if exc.errno == errno.ENOENT:
            return "is a dangling symlink" if os.path.islink(path) else "does not exist"
        if exc.errno == errno.EACCES:
            return f"cannot be read: permission denied on {denied_folder(path)}"
        return f"cannot be read ({exc.strerror})"
    return None


def endless_kind(path: str | os.PathLike[str]) -> str | None:
    """'a character device', 'a block device' or 'a named pipe (FIFO)' when reading `path` may
    never end; None for anything else, and for a pipe this process holds (`<(command)`)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode) and not _held(path):
        return "a named pipe (FIFO)"
    return None


def _held(path: str | os.PathLike[str]) -> bool:
    """A path naming a descriptor of this process (/dev/fd/N, /dev/stdin, /proc/self/fd/N):
    bash's `<(command)` passes one whose writer is already running."""
    names = (os.fspath(path), os.path.realpath(path))
    return any(n == "/dev/stdin" or n.startswith(("/dev/fd/", "/proc/")) for n in names)


def endless_message(kind: str, expected: str = "a regular file or a dataset folder") -> str:
    """Why an input of that kind is refused before it is read."""
    wait = "waits for a writer that may never come" if "FIFO" in kind else "would never end"
    return f"is {kind}, not {expected}: reading it {wait}"


ENDLESS_FIX = (
    "copy the data into a regular file (`cp`, or `COMMAND > rows.jsonl`) or a folder of .jsonl "
    "shards and validate that; a command's output can also be passed as <(COMMAND)"
)


def folder_problem(path: Path) -> str | None:
    """Why a folder cannot be listed and searched, or None."""
    try:
        with os.scandir(path):
            pass
        os.stat(os.path.join(path, os.curdir))
    except PermissionError:
        return f"cannot be read: permission denied on {path}"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return None


def input_problem(path: Path) -> str | None:
    """Why an input path cannot be read at all (missing, a symlink loop, no permission on it or
    a folder above it), or None. Setup problems: `validate` exits 2 on them."""
    problem = stat_problem(path)
    if problem is not None:
        return problem
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        return folder_problem(path)
    kind = endless_kind(path)
    if kind is not None:
        return endless_message(kind)
    if not stat.S_ISREG(mode):
        return None  # /dev/fd/N (`<(command)`): read once, by the scan
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return None
