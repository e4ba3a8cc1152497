"""Relative input paths NeMo-RL opens from its working directory (the checkout root), not from
the config file's folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from catalog.errors import Finding
from runners.preflight import BoundArtifact, PreflightContext, rule
from runners.preflight.topology import finding, warning


def found_only_beside(ctx: PreflightContext, art: BoundArtifact) -> bool:
    """A kept relative path missing where NeMo-RL opens it but present from the config's folder."""
    if not art.written or not art.is_path or os.path.exists(art.value):
        return False
    if ctx.remote is not None and ctx.remote.exists.get(art.value):
        return False
    return os.path.exists(art.beside)


@rule("relative_inputs", needs=("nemo_rl_config",))
def relative_inputs(ctx: PreflightContext) -> Iterator[Finding]:
    """E-INPUT-RELATIVE / W-INPUT-RELATIVE: a relative input NeMo-RL would not find."""
    for art in ctx.inputs:
        if not art.written:
            continue
        there = f"it exists relative to the config file's folder: {art.beside}"
        write = f"write the absolute path: {art.config_key}: {art.beside}"
        if not art.is_path:  # no checkout known here: nothing says where NeMo-RL will run
            beside = os.path.exists(art.beside)
            yield warning(
                ctx,
                "W-INPUT-RELATIVE",
                art.config_key,
                f"NeMo-RL opens {art.written!r} from its checkout root, which is not known here,"
                " so the input was not checked" + (f"; {there}" if beside else ""),
                write if beside else "give an absolute path, or --nemo-rl DIR to check it",
            )
        elif found_only_beside(ctx, art):
            yield finding(
                ctx,
                "E-INPUT-RELATIVE",
                art.config_key,
                f"NeMo-RL opens {art.written!r} from its working directory, the checkout root, "
                f"as {art.value}, which does not exist; {there}",
                f"{write} (NeMo-RL never reads paths from the config's folder)",
            )
