"""The registry of codes (`codes.toml`): every E-/W- code a finding can carry, once, with its
meaning, usual fix, the rule that raises it and the upstream facts it rests on. Manifests add
only what differs for their step; `explain` prints an entry, `docs` renders docs/codes.md.
"""

from __future__ import annotations

from functools import cached_property, lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from catalog.errors import ERROR, WARNING, StepsError
from catalog.model_errors import dotted, error_from, file_lines, line_of
from catalog.tomlfile import load_toml

CODES_PATH = Path(__file__).resolve().parent / "codes.toml"
CODE_PATTERN = r"^[EW]-[A-Z0-9]+(-[A-Z0-9]+)*$"
UPSTREAM_AT = "NeMo-RL file:line at the pin (catalog/upstream.py) unless the entry names a version"
Area = Literal[
    "preflight", "launch", "chain", "run", "config", "data", "catalog", "pipeline", "cli", "nemo_rl"
]
AREA_TITLES = {
    "preflight": "Preflight rules (before NeMo-RL starts)",
    "launch": "Launching: cluster profiles, submitting, following, local interpreters",
    "chain": "Chains (`run --until-done`)",
    "run": "Runs: steps, inputs, run dirs",
    "config": "Configs and overrides",
    "data": "Data: row contracts, rl_prep, checkpoints",
    "nemo_rl": "NeMo-RL checkouts, versions and scripts",
    "pipeline": "Pipelines and compose",
    "catalog": "The catalog and `check`",
    "cli": "The command line",
}


class CodeEntry(BaseModel):
    """One code. Severity comes from the prefix: E- is an error, W- a warning."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str = Field(pattern=CODE_PATTERN)
    area: Area = Field(description="Where it is raised.")
    meaning: str = Field(min_length=1, description="What went wrong, in one line.")
    fix: str = Field(min_length=1, description="The usual fix (a finding's own fix is sharper).")
    check: str | None = Field(None, description="The preflight rule that raises it, if any.")
    upstream: list[str] = Field([], description="What it mirrors upstream (see UPSTREAM_AT).")
    condition: str | None = Field(
        None, min_length=1, description="When the rule raises it, in detail (PREFLIGHT.md)."
    )
    when: str | None = Field(
        None, min_length=1, description="When NeMo-RL itself would fail (PREFLIGHT.md)."
    )
    documentation_only: str | None = Field(
        None, min_length=1, description="Why the code is kept though no source raises it."
    )
    needs: list[str] | None = Field(
        None,
        description="For a code no rule raises: what a step's runner kind must have "
        "(runners.kinds.base.CAPABILITIES) for a run of it to meet the code; [] = every kind.",
    )

    @model_validator(mode="after")
    def _one_source_of_steps(self) -> CodeEntry:
        if self.check and self.needs is not None:
            raise ValueError("a code with a check meets the kinds its rule runs for: drop needs")
        return self

    @property
    def severity(self) -> str:
        return WARNING if self.code.startswith("W-") else ERROR

    def to_dict(self) -> dict:
        return {**self.model_dump(exclude_none=True), "severity": self.severity}


class Registry:
    """The entries by code, and where each sits in the file (for findings)."""

    def __init__(self, entries: dict[str, CodeEntry], path: Path) -> None:
        self.entries, self.path = entries, path

    def __contains__(self, code: object) -> bool:
        return code in self.entries

    def get(self, code: str) -> CodeEntry | None:
        return self.entries.get(code)

    @cached_property
    def _lines(self) -> dict[tuple, int]:
        return file_lines(self.path)

    def line(self, code: str) -> int | None:
        return line_of(self._lines, code)


def parse_registry(path: Path) -> Registry:
    """Read and validate a registry file; a bad entry is E-CODES-SCHEMA at its line."""
    raw = load_toml(path, code="E-CODES-TOML")
    entries: dict[str, CodeEntry] = {}
    fix = (
        "each code is a table with area, meaning, fix and optional check, upstream, "
        "condition, when, needs and documentation_only (see catalog/codes.py)"
    )
    for code, fields in raw.items():
        if not isinstance(fields, dict) or "code" in fields:
            table = isinstance(fields, dict)
            problem = "code is the table's name, not a key" if table else "must be a table"
            raise StepsError(
                "E-CODES-SCHEMA",
                f"[{code}]: {problem}",
                path=str(path),
                line=line_of(path, code),
                fix=fix,
                exit_code=2,
            )
        try:
            entries[code] = CodeEntry(code=code, **fields)
        except ValidationError as exc:
            raise error_from(
                exc,
                code="E-CODES-SCHEMA",
                path=path,
                locate=lambda loc: line_of(path, code),  # noqa: B023 - called at once
                message=lambda err, loc: f"{_where(code, loc)}: {err['msg']}",  # noqa: B023
                fix=fix,
                exit_code=2,
            ) from None
    return Registry(entries, path)


def _where(code: str, loc: tuple) -> str:
    return f"[{code}] {dotted(loc)}" if loc else f"[{code}]"


@lru_cache(maxsize=1)
def registry() -> Registry:
    """The built-in registry, read once per process."""
    return parse_registry(CODES_PATH)


def cell(text: str) -> str:
    """`text` as one cell of a Markdown table: one line, its `|` escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def render_codes(reg: Registry, generated: str) -> str:
    """docs/codes.md: every code, grouped by area, from the registry."""
    out = [
        "# Codes",
        "",
        generated,
        "",
        "Every finding carries a code: `E-...` is an error (it stops the command; exit 1, or 2",
        "for a setup problem), `W-...` a warning. `python -m steps explain CODE` prints one",
        "entry. The registry is `catalog/codes.toml`; a step meets the codes of the rules its",
        "runner kind gets, and its `step.toml` adds only what differs for it (`show STEP` lists",
        "them all). A finding's own fix",
        "names the key or file at hand; the fix below is the usual one. `rule` is the preflight",
        "rule that raises the code (PREFLIGHT.md describes the rules and their versions);",
        "`upstream` is what it mirrors:",
        f"{UPSTREAM_AT}.",
    ]
    by_area: dict[str, list[CodeEntry]] = {}
    for entry in sorted(reg.entries.values(), key=lambda e: e.code):
        by_area.setdefault(entry.area, []).append(entry)
    for area, title in AREA_TITLES.items():
        if area not in by_area:
            continue
        out += ["", f"## {title}", "", "| code | meaning | usual fix | rule | upstream |"]
        out.append("| --- | --- | --- | --- | --- |")
        for e in by_area[area]:
            note = f" (documentation only: {e.documentation_only})" if e.documentation_only else ""
            out.append(
                f"| `{e.code}` | {cell(e.meaning)}{cell(note)} | {cell(e.fix)} "
                f"| {f'`{e.check}`' if e.check else '-'} | {cell('; '.join(e.upstream)) or '-'} |"
            )
    return "\n".join(out) + "\n"
