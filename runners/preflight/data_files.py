"""The data files a step binds, and a cheap look at their rows, for the config rules."""

from __future__ import annotations

import json
from pathlib import Path

from runners.preflight import PreflightContext


def bound_file(ctx: PreflightContext, config_key: str) -> Path | None:
    """The local file bound to a config key: the runner's binding, else the config value."""
    for art in ctx.inputs:
        if art.config_key == config_key:
            return Path(art.value) if art.is_path else None
    value = ctx.get(config_key)
    if not isinstance(value, str) or not value or value == "???":
        return None
    path = Path(value).expanduser()
    if not path.is_absolute() and ctx.config_file is not None:
        path = Path(ctx.config_file).parent / path
    return path


def first_row(path: Path) -> dict | None:
    """The first row as NeMo-RL's loader reads it (JSONL: the first non-empty line); None when
    it is not an object."""
    from catalog.contracts.builder_rows import read_builder_rows
    from catalog.contracts.builder_scan import builder_files

    built = builder_files(path)
    if built:
        file, builder = built[0]
        rows = read_builder_rows(file, builder, limit=1).rows
        return rows[0][2] if rows and isinstance(rows[0][2], dict) else None
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                try:
                    row = json.loads(raw)
                except ValueError:
                    return None
                return row if isinstance(row, dict) else None
    return None
