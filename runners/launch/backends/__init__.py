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

import importlib
import re
from typing import TYPE_CHECKING

from catalog.errors import StepsError

if TYPE_CHECKING:
    from runners.launch.backends.base import BackendTraits

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


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
    module = None
    if _NAME.match(name or "") and name != "base":
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    return getattr(module, "BACKEND", None)


def known() -> list[str]:
    """The backends' names: the modules of this package, read from its folder(s) (`__path__`)."""
    import pkgutil

    names = (m.name for m in pkgutil.iter_modules(__path__))
    return sorted(n for n in names if not n.startswith("_") and n != "base")
