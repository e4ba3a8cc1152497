"""The folders NeMo-RL creates as it runs (`logger.log_dir`, `checkpointing.checkpoint_dir`):
one at or under a file, or where this user cannot write, fails there (hours in, for checkpoints).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from catalog.errors import Finding
from catalog.shell_variables import path_variables
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import enabled, finding

WHERE = {
    "logger.log_dir": "logger.py:1616 get_next_experiment_dir",
    "checkpointing.checkpoint_dir": "checkpoint.py:219 init_tmp_checkpoint",
}


def file_in_the_way(path: str) -> str | None:
    """The existing regular file at `path` or at one of its parents (None: a folder is first)."""
    here = Path(os.path.normpath(path))
    found = next((p for p in (here, *here.parents) if os.path.isfile(p) or os.path.isdir(p)), None)
    return str(found) if found is not None and os.path.isfile(found) else None


def _output_dirs(ctx: PreflightContext) -> Iterator[tuple[str, str]]:
    """(key, path where NeMo-RL makes it) for log_dir and an enabled checkpoint_dir, judged
    on this machine only (a cluster's folders are the job's)."""
    if ctx.remote is not None:
        return
    keys = ["logger.log_dir"]
    if enabled(ctx.get("checkpointing")):
        keys.append("checkpointing.checkpoint_dir")
    for key in keys:
        value = ctx.get(key)
        if not isinstance(value, str) or not value or value == "???":
            continue
        if not os.path.isabs(value):
            if ctx.nemo_rl_dir is None:
                continue  # where NeMo-RL runs is not known here
            value = os.path.join(ctx.nemo_rl_dir, value)
        yield key, value


def nearest_existing(path: str) -> str:
    """`path` itself if it exists, else its nearest existing parent."""
    here = Path(os.path.normpath(path))
    return str(next((p for p in (here, *here.parents) if os.path.lexists(p)), here.anchor))


def writable_folder(folder: str) -> bool:
    """Whether this user can create entries in `folder` (its permissions, a read-only mount)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        return not os.statvfs(folder).f_flag & os.ST_RDONLY
    except OSError:
        return True  # no file-system answer: the permission check stands


@rule("output_dirs_writable")
def output_dirs_writable(ctx: PreflightContext) -> Iterator[Finding]:
    """E-OUTPUT-UNWRITABLE: log_dir or an enabled checkpoint_dir cannot be made or written."""
    for key, value in _output_dirs(ctx):
        if path_variables(value) or file_in_the_way(value) is not None:
            continue  # E-SHELL-VARIABLE / E-OUTPUT-UNDER-FILE name the cause
        folder = nearest_existing(value)
        if not os.path.isdir(folder) or writable_folder(folder):
            continue
        made = "exists" if folder == os.path.normpath(value) else f"would be made in {folder}"
        when = (
            "at the first checkpoint, after the first training steps"
            if key.startswith("checkpointing")
            else "30 s after launch"
        )
        yield finding(
            ctx,
            "E-OUTPUT-UNWRITABLE",
            key,
            f"{value} {made}, which this user cannot write to: NeMo-RL fails there {when} "
            f"(nemo_rl/utils/{WHERE[key]}, v0.7.0)",
            f"point {key} at a folder you can write to, or fix the permissions of {folder}",
        )


@rule("output_dirs_under_file", needs=("nemo_rl_config",))
def output_dirs_under_file(ctx: PreflightContext) -> Iterator[Finding]:
    """E-OUTPUT-UNDER-FILE: log_dir or an enabled checkpoint_dir is, or is under, a file."""
    for key, value in _output_dirs(ctx):
        blocker = file_in_the_way(value)
        if blocker is None:
            continue
        what = "is a file" if blocker == os.path.normpath(value) else f"is under the file {blocker}"
        yield finding(
            ctx,
            "E-OUTPUT-UNDER-FILE",
            key,
            f"{value} {what}: NeMo-RL cannot create the folder there (NotADirectoryError or "
            f"FileExistsError at nemo_rl/utils/{WHERE[key]}, v0.7.0)",
            f"point {key} at a folder (new or existing), or move {blocker} away",
        )
