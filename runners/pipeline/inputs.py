"""Pipeline inputs given by artifact name (`path: nano3-rl-data:latest`), resolved as `--input
PORT=NAME` is (`runners.artifacts.resolve`); a path that exists stays a path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from catalog.pipeline import UNSET


def resolve_named_inputs(plan: Any, pf: Any, root: Path, graph: Any = None) -> list[Any]:
    """Replace each input named by reference with its version's path, in the plan's inputs and
    every stage bound to it; what each resolved to."""
    found: list[Any] = []
    for name, spec in pf.model.inputs.items():
        bound = plan.inputs.get(name)
        if bound is None or bound.hub or spec.path == UNSET or os.path.exists(bound.value):
            continue
        from runners.artifacts.resolve import resolve_inputs  # only when a name may be given

        paths, hits = resolve_inputs({name: spec.path}, {name: spec.type}, root, pf.folder, graph)
        if not hits:
            continue
        bound.value = paths[name]
        for stage in plan.stages:
            for b in stage.inputs.values():
                if b.source == f"inputs.{name}":
                    b.value = paths[name]
        plan.findings = [
            f
            for f in plan.findings
            if not (f.code == "W-PIPELINE-INPUT-PATH" and f.message.startswith(f"input '{name}'"))
        ]
        found.extend(hits)
    return found
