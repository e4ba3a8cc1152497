"""Whether a file could have been written by anyone but you: records that decide what runs
(run.json, the artifact registry, env.toml) are used only when they are yours alone."""

from __future__ import annotations

import os
import shlex
import stat
from functools import lru_cache
from pathlib import Path

from catalog.errors import StepsError


@lru_cache(maxsize=64)
def _private_group(gid: int, uid: int) -> bool:
    """The owner's own group (user private groups, umask 002): no one else is in it."""
    import grp
    import pwd

    try:
        user, group = pwd.getpwuid(uid), grp.getgrgid(gid)
    except KeyError:
        return False
    return group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}


def problem(item: Path, folder: bool) -> str | None:
    """Why someone else may have written `item`, or None when only you (or root, for a
    folder) could. Raises OSError when it cannot be looked at."""
    st = item.stat()
    uid = os.getuid()
    if st.st_uid not in ((uid, 0) if folder else (uid,)):  # root can change anything you run
        return f"is owned by uid {st.st_uid}, not by you (uid {uid})"
    if st.st_mode & stat.S_IWOTH:
        return "is writable by others"
    if st.st_mode & stat.S_IWGRP and not _private_group(st.st_gid, st.st_uid):
        return f"is writable by its group (gid {st.st_gid})"
    return None


def untrusted(
    items: list[tuple[Path, bool]], used: str, why: str, otherwise: str
) -> StepsError | None:
    """E-RECORD-UNTRUSTED (exit 2) naming the first of `items` (path,
    is a folder; the record itself first) someone else may have written, else None: `used`
    names the record, `why` says why it must be yours alone, `otherwise` what else to do."""
    for item, folder in items:
        try:
            found = problem(item, folder)
        except OSError as exc:
            found = f"cannot be checked ({exc.strerror})"
        if found is None:
            continue
        how = f"chown {os.getuid()}" if "owned" in found else "chmod go-w"
        return StepsError(
            "E-RECORD-UNTRUSTED",
            f"not using {used}: {f'its folder {item}' if folder else 'it'} {found}; {why}",
            path=str(items[0][0]),
            fix=f"if it is yours, `{how} {shlex.quote(str(item))}`; else {otherwise}",
            exit_code=2,
        )
    return None
