"""Shell variables in path values: NeMo-RL never expands `$NAME`, so `checkpoint_dir:
$SCRATCH/ckpt` is a folder named `$SCRATCH`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from catalog.errors import Finding
from catalog.shell_variables import as_oc_env, path_variables
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import finding

PATH_KEY = re.compile(r"(_dir|_path|_paths|_file|_fpath|^data_path|^model_name)$")
OURS = ("run",)  # steps' own section, read by steps (which does expand the user's paths)


def _path_values(node: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted key, value) for every string at a path-like key (list items included)."""
    if isinstance(node, dict):
        for name, value in node.items():
            key = f"{prefix}.{name}" if prefix else str(name)
            if not prefix and name in OURS:
                continue
            is_path = bool(PATH_KEY.search(str(name))) or key.endswith("tokenizer.name")
            if is_path and isinstance(value, str):
                yield key, value
            elif is_path and isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, str):
                        yield f"{key}[{i}]", item
            else:
                yield from _path_values(value, key)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _path_values(item, f"{prefix}[{i}]")


@rule("shell_variables")
def shell_variables(ctx: PreflightContext) -> Iterator[Finding]:
    """E-SHELL-VARIABLE: `$NAME` in a path value, which NeMo-RL takes literally."""
    for key, value in _path_values(ctx.config):
        names = path_variables(value)
        if not names:
            continue
        folder = f"${names[0]}"
        yield finding(
            ctx,
            "E-SHELL-VARIABLE",
            key,
            f"{value!r} uses the shell variable {folder}, which NeMo-RL does not expand: it "
            f"would use a folder literally named {folder!r}",
            f"write {key}: {as_oc_env(value)} (OmegaConf reads the environment with "
            "${oc.env:NAME}), or the path itself",
        )
