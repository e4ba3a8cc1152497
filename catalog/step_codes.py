"""The codes a run of a step can meet, derived rather than listed: the codes of the preflight
rules that apply to its runner kind, the codes no rule raises whose `needs` (codes.toml) the
kind has, and those its manifest names for itself (`[errors]`).

`show` must not load the rules (pydantic, every rule module), so `steps docs` writes each kind's
codes to `kind_codes.json` beside this file (runners.check.generated) and `check` fails when it
is stale.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from catalog.record_file import read_json

KIND_CODES = Path(__file__).resolve().parent / "kind_codes.json"


def step_codes(runner: str, listed: Iterable[str]) -> dict[str, str | None]:
    """Every code a run of the step can meet: its kind's rules' (code -> rule), then the codes
    its manifest names for itself (`listed`; code -> None when no rule of the kind raises it)."""
    try:
        table = read_json(KIND_CODES)
    except (OSError, ValueError):  # not generated (`steps docs` writes it): the manifest's own
        table = {}
    derived: dict[str, str | None] = dict(table.get(runner, {}) if isinstance(table, dict) else {})
    for code in listed:
        derived.setdefault(code, None)
    return derived
