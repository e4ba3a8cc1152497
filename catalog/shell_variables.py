"""Shell variables written into config values (`$SCRATCH/ckpt`, `${HOME}/data`).

NeMo-RL never expands them: OmegaConf resolves `${NAME}` as a reference to a config key named
NAME (an interpolation error when there is none) and leaves `$NAME` as text, so a path becomes
a folder literally named `$SCRATCH`. OmegaConf reads the environment only through
`${oc.env:NAME}`.
"""

from __future__ import annotations

import re

# `$NAME` or `${NAME}` as a whole path component (start, or after a slash; then a slash or end)
IN_PATH = re.compile(r"(?:^|/)\$(\{)?([A-Za-z_][A-Za-z0-9_]*)(?(1)\})(?=/|$)")
MISSING_KEY = re.compile(r"Interpolation key '([A-Za-z_][A-Za-z0-9_]*)' not found")
ENV_STYLE = re.compile(r"[A-Z_][A-Z0-9_]*")


def path_variables(value: str) -> list[str]:
    """The shell variable names used as path components of `value`."""
    return [m.group(2) for m in IN_PATH.finditer(value)]


def as_oc_env(value: str) -> str:
    """`value` with each path-component variable written as OmegaConf's `${oc.env:NAME}`."""
    return IN_PATH.sub(lambda m: m.group(0).split("$")[0] + "${oc.env:" + m.group(2) + "}", value)


def env_style_missing_key(message: str) -> str | None:
    """The name of an upper-case interpolation key OmegaConf did not find (`${HOME}`), which
    is almost always meant as an environment variable; None for any other message."""
    found = MISSING_KEY.search(message)
    if found and ENV_STYLE.fullmatch(found.group(1)):
        return found.group(1)
    return None
