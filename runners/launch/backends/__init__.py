"""Cluster backends: what a profile's `executor` names, one module per backend.

Each exports `BACKEND`, a `base.BackendTraits` subclass: what differs between executors, as
attributes, and its implementation, imported only when used (a Slurm launch never imports Ray).
`check` fails on a backend that leaves a decision open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from catalog import registered
from catalog.errors import StepsError

if TYPE_CHECKING:
    from runners.launch.backends.base import BackendTraits


def traits(executor: str) -> type[BackendTraits]:
    """The backend `executor` names (its module is imported on first use only)."""
    found = find(executor)
    if found is None:
        raise StepsError(
            "E-PROFILE",
            f"no cluster backend for executor {executor!r}",
            fix=f"use one of: local, {', '.join(known())}",
            exit_code=2,
        )
    return found


def find(name: str | None) -> type[BackendTraits] | None:
    """The backend called `name`, None when there is none of that name."""
    return registered.find(__name__, name, "BACKEND")


def known() -> list[str]:
    """The backends' names: the modules of this package."""
    return registered.known(__path__)
