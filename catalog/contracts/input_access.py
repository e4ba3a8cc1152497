"""Whether an input of `validate` can be read, and if not, why, without consuming it.

A permission problem names the folder that stops this user (a file in an unsearchable folder
is not "missing"). A FIFO or a character device is never opened here: a probe's open and close
of a named pipe takes the writer's data (or sends it SIGPIPE), so the one reader is the scan.
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
    return StepsError(
        "E-INPUT-UNREADABLE",
        f"cannot read the input: permission denied on {folder}",
        path=str(path),
        fix=DENIED_FIX + (f" ({owner})" if owner else ""),
        exit_code=EXIT_USAGE,
    )


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
    if not stat.S_ISREG(mode):
        return None  # a FIFO, /dev/fd/N or a device: read once, by the scan
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return None
