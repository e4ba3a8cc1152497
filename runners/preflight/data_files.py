"""The data files a step binds, and a cheap look at their rows, for the config rules."""

from __future__ import annotations

import json
from collections.abc import Iterator
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
    """The first non-empty line parsed as JSON, or None when it is not a JSON object."""
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                try:
                    row = json.loads(raw)
                except ValueError:
                    return None
                return row if isinstance(row, dict) else None
    return None


def agent_names(path: Path, limit: int = 50_000) -> Iterator[tuple[int, str]]:
    """(line, agent_ref.name) of rows that carry one, for the first `limit` lines."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if lineno > limit:
                return
            if b'"agent_ref"' not in raw:
                continue
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            ref = row.get("agent_ref") if isinstance(row, dict) else None
            name = ref.get("name") if isinstance(ref, dict) else None
            if isinstance(name, str) and name:
                yield lineno, name
