"""How a bench stops when it cannot measure (a command it times failed, Slurm missing): exit 2
with the reason on stderr. Exit 1 means a target was missed; bench/smoke.py tells the two apart
by the code, so a broken bench never passes for a slow one."""

from __future__ import annotations

import sys
from typing import NoReturn


def abort(message: str) -> NoReturn:
    """Print `message` to stderr and exit 2."""
    print(message, file=sys.stderr)
    raise SystemExit(2)
