"""A package's `package_info.py` (NeMo-RL, NeMo-Gym) read with `ast`, never imported."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any


def package_info(path: Path) -> dict[str, Any] | None:
    """The module-level constants (`MAJOR = 0`, `PRE_RELEASE = "rc0"`, ...); None if unreadable."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    consts: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    consts[target.id] = node.value.value
    return consts
