"""The folders NeMo-RL creates as it runs: `logger.log_dir` (the example scripts'
`get_next_experiment_dir` makes `<log_dir>/exp_NNN` before setup, v0.7.0 logger.py:1616) and
`checkpointing.checkpoint_dir` (`tmp_step_N` made at the first save, checkpoint.py:219). A path
that is, or lies under, an existing regular file fails there with NotADirectoryError or
FileExistsError: the log dir 30 s after launch, the checkpoint dir after the first steps.
Relative paths are judged where NeMo-RL opens them, its checkout root; a cluster's folders are
left to the job (only what this machine sees is judged).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from catalog.errors import Finding
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import finding

WHERE = {
    "logger.log_dir": "logger.py:1616 get_next_experiment_dir",
    "checkpointing.checkpoint_dir": "checkpoint.py:219 init_tmp_checkpoint",
}


def file_in_the_way(path: str) -> str | None:
    """The existing regular file at `path` or at one of its parents (None: none is)."""
    current = os.path.normpath(path)
    while True:
        if os.path.isfile(current):
            return current
        if os.path.isdir(current):
            return None
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


@rule("output_dirs_under_file", needs=("nemo_rl_config",))
def output_dirs_under_file(ctx: PreflightContext) -> Iterator[Finding]:
    """E-OUTPUT-UNDER-FILE: log_dir or an enabled checkpoint_dir is, or is under, a file."""
    if ctx.remote is not None:
        return
    checkpointing = ctx.get("checkpointing") or {}
    keys = ["logger.log_dir"]
    if isinstance(checkpointing, dict) and checkpointing.get("enabled"):
        keys.append("checkpointing.checkpoint_dir")
    for key in keys:
        value = ctx.get(key)
        if not isinstance(value, str) or not value or value == "???":
            continue
        if not os.path.isabs(value):
            if ctx.nemo_rl_dir is None:
                continue  # where NeMo-RL runs is not known here
            value = os.path.join(ctx.nemo_rl_dir, value)
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
