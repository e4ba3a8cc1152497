"""Prompt files NeMo-RL opens at data setup (`prompt_file` / `system_prompt_file`), judged from
the checkout on this machine.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from catalog.errors import Finding
from catalog.nemo_rl_version import in_range
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import UNRESOLVED, algorithm, cite, dataset_entries, finding

KEYS = ("prompt_file", "system_prompt_file")
RAISED = {
    "0.4.0": "nemo_rl/data/interfaces.py:71",
    "0.6.0": "nemo_rl/data/interfaces.py:74",
    "pin": "nemo_rl/data/interfaces.py:81",
}


def _read(ctx: PreflightContext) -> Iterator[tuple[str, str]]:
    """(config key that set it, path as written) for each prompt file NeMo-RL will open."""
    seen: set[str] = set()
    if in_range(ctx.nemo_rl_version, "0.6.0+"):
        for key, entry, written in dataset_entries(ctx):
            for name in KEYS:
                value = entry.get(name)
                where = f"{key}.{name}" if name in written else f"data.default.{name}"
                if isinstance(value, str) and where not in seen:
                    seen.add(where)  # a default's file is one cause, however many entries
                    yield where, value
    elif algorithm(ctx) == "grpo":
        for name in KEYS:
            value = ctx.get(f"data.{name}")
            if isinstance(value, str):
                yield f"data.{name}", value


@rule("prompt_files")
def prompt_files(ctx: PreflightContext) -> Iterator[Finding]:
    """E-PROMPT-FILE: a prompt or system prompt file that does not exist where NeMo-RL runs."""
    if ctx.remote is not None or algorithm(ctx) not in ("dpo", "grpo"):
        return
    for key, written in _read(ctx):
        if not written or written == UNRESOLVED:
            continue
        path = written
        if not os.path.isabs(written):
            if ctx.nemo_rl_dir is None:
                continue  # where NeMo-RL runs is not known here
            path = os.path.join(ctx.nemo_rl_dir, written)
        if os.path.isfile(path):
            continue
        relative = "" if path == written else " (relative paths are opened from the checkout)"
        beside = (
            os.path.join(os.path.dirname(ctx.config_file), written)
            if ctx.config_file is not None and not os.path.isabs(written)
            else None
        )
        fix = (
            f"write the absolute path: {key}: {beside}"
            if beside and os.path.isfile(beside)
            else f"point {key} at an existing text file, or null for none"
        )
        yield finding(
            ctx,
            "E-PROMPT-FILE",
            key,
            f"{path} is not a file{relative}: NeMo-RL raises FileNotFoundError at "
            f"{cite(ctx.nemo_rl_version, RAISED)} when it sets up data",
            fix,
        )
