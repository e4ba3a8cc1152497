"""How config and pipeline files name an artifact: a path (relative to the file that wrote it,
or the current directory) or a Hugging Face hub id `org/name`, only when no such local path
exists (a local folder wins, as it does for `from_pretrained`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")


def absolute(value: str, base: str | Path) -> str:
    """`value` as a normalized absolute path (`~` expanded, relative to `base`)."""
    return os.path.normpath(os.path.join(base, os.path.expanduser(value)))


def is_hub_id(value: str, base: str | Path) -> bool:
    """True when `value` names a hub repository rather than a folder under `base`."""
    return bool(HUB_ID.match(value)) and not os.path.exists(absolute(value, base))
