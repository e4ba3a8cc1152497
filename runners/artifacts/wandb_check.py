"""env.toml's `[wandb]` table checked as W&B checks it, before any work (a finding, not a
traceback).

wandb.init refuses a project over 128 characters or holding any of / \\ # ? % : (its UsageError),
and an unset `${oc.env:NAME}` would reach it as literal text: each is E-WANDB-SETTINGS at the key's
line. W&B configured without the wandb package is W-WANDB-MISSING: nothing is logged.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from catalog.errors import WARNING, Finding

PROJECT_CHARS = "/\\#?%:"  # wandb.sdk.wandb_settings.Settings.validate_project
MAX_PROJECT = 128
OC_ENV = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,([^}]*))?\}")
_FIX = "correct the [wandb] table of env.toml (project, entity), or remove it to log nothing to W&B"


def wandb_installed() -> bool:
    """Whether `import wandb` can find the package (without importing it: seconds)."""
    try:
        return importlib.util.find_spec("wandb") is not None
    except (ImportError, ValueError):  # sys.modules["wandb"] = None: blocked
        return False


def resolve_table(table: Mapping[str, Any], env: Mapping[str, str]) -> tuple[dict, list[str]]:
    """The table with each `${oc.env:NAME[,default]}` replaced from `env`, and the keys holding one
    that is unset (with no default)."""
    unset: list[str] = []
    out: dict[str, Any] = {}
    for key, value in table.items():
        if not isinstance(value, str):
            out[key] = value
            continue

        def one(m: re.Match, key: str = str(key)) -> str:
            name, default = m.group(1), m.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default.strip().strip("'\"")
            unset.append(key)
            return m.group()

        out[key] = OC_ENV.sub(one, value)
    return out, unset


def table_findings(
    table: Any, env: Mapping[str, str], path: Path | None, lines: Mapping[tuple, int]
) -> list[Finding]:
    """Every problem of an env.toml `[wandb]` table W&B would raise on, at its key's line."""
    if not isinstance(table, dict) or not table.get("project"):
        return []
    values, unset = resolve_table(table, env)
    where = str(path) if path else None
    found = []

    def bad(key: str, message: str, fix: str = _FIX) -> None:
        found.append(Finding("E-WANDB-SETTINGS", f"[wandb] {key}: {message}", where,
                             lines.get(("wandb", key)), fix=fix, key=f"wandb.{key}"))  # fmt: skip

    for key in dict.fromkeys(unset):
        names = ", ".join(f"${m.group(1)}" for m in OC_ENV.finditer(str(table[key])))
        bad(key, f"{table[key]!s} needs {names}, which is not set here",
            "export it before the run, or write the value into the [wandb] table")  # fmt: skip
    project = values.get("project")
    if "project" not in unset:
        if not isinstance(project, str):
            bad("project", f"must be a string, not {type(project).__name__}")
        elif len(project) > MAX_PROJECT:
            bad("project", f"is {len(project)} characters long; W&B takes at most {MAX_PROJECT}")
        elif found_chars := sorted({c for c in project if c in PROJECT_CHARS}):
            shown = " ".join(found_chars)
            bad("project", f"{project!r} holds {shown}: W&B refuses a project name with any "
                f"of {' '.join(PROJECT_CHARS)}")  # fmt: skip
    entity = values.get("entity")
    if "entity" not in unset and entity is not None and not isinstance(entity, str):
        bad("entity", f"must be a string, not {type(entity).__name__}")
    if not found and not wandb_installed():
        found.append(missing_finding(where, lines.get(("wandb",))))
    return found


def missing_finding(where: str | None, line: int | None) -> Finding:
    """W-WANDB-MISSING: W&B is configured here and the wandb package is not installed."""
    return Finding(
        "W-WANDB-MISSING",
        "a [wandb] table asks to log this run's artifacts to W&B, but the wandb package is not "
        "installed here: the run registers its outputs locally and logs nothing to W&B",
        where,
        line,
        fix="pip install 'nemo-rl-steps[wandb]' to log them, or remove the [wandb] table",
        severity=WARNING,
        key="wandb",
    )
