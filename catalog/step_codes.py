"""The codes a run of a step can meet, derived rather than listed: every code a preflight rule
raises (catalog/codes.toml `check`) when that rule applies to the step's runner kind (the rule
`needs` only what the kind `has`), the codes no rule raises whose `needs` in codes.toml the kind
has (launch, chain), and the codes its manifest names for itself (`[errors]`: notes with a
description, recovery or check of their own). So a manifest keeps only what is its step's own.

The rules live in runners/, and `show` must not load them (pydantic, every rule module):
`steps docs` writes each kind's codes to `kind_codes.json` beside this file
(runners.check.generated), `check` fails when it is stale, and `show` / `explain` read it.
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
