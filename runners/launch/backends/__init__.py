"""Cluster backends: what a profile's `executor` names, one module per backend (like runner
kinds, runners/kinds/).

A backend module here exports `BACKEND`, a `runners.launch.backends.base.BackendTraits`
subclass: what differs between executors, as attributes (`has`: what the remote preflight rules
and the launch code may rely on; `chain`: who drives an --until-done chain; `located_by`: which
profile key says where a recorded job runs...) and the implementation, imported only when a job
of that backend is launched or asked about (a Slurm launch never imports Ray). A new backend is
one module here plus its tests; `check` fails on one that leaves a decision open.
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
