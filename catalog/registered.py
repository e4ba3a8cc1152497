"""Things registered by module: a package holds one module per name, each exporting one
attribute (runner kinds' `KIND`, cluster backends' `BACKEND`). A new one is a new module; the
names are the package's modules, read from its folder(s), `base` and private ones aside."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable
from typing import Any

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def find(package: str, name: str | None, attr: str) -> Any:
    """`package.name`'s `attr` (the module imported on first use only), None when there is no
    such module or it exports none; an import error inside the module is raised."""
    module = None
    if _NAME.match(name or "") and name != "base":
        try:
            module = importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.{name}":
                raise
    return getattr(module, attr, None)


def known(path: Iterable[str]) -> list[str]:
    """The registered names: the modules found on a package's `__path__`."""
    names = (m.name for m in pkgutil.iter_modules(path))
    return sorted(n for n in names if not n.startswith("_") and n != "base")
