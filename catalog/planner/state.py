"""The plan while it is being built: the stages so far, their wiring, and the findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.config_values import ConfigValues, ReadConfig
from catalog.did_you_mean import did_you_mean
from catalog.discovery import StepEntry
from catalog.errors import WARNING
from catalog.pipeline import PipelineFile
from catalog.planner.model import Plan
from catalog.types import TypeGraph, mapped_type


@dataclass
class StageDraft:
    """A stage while planning: its step entry, config values and narrowed port types."""

    id: str
    index: int | None  # position in the file; None when inserted
    entry: StepEntry
    config: Path
    overrides: list[str]
    values: ConfigValues
    consumes: dict[str, dict]
    produces: dict[str, dict]
    types_in: dict[str, str]
    types_out: dict[str, str]
    wired: dict[str, tuple[str, str]] = field(default_factory=dict)  # port -> (ref, type)
    attempted: set[str] = field(default_factory=set)  # ports the file wires (even if badly)
    dry_run: bool = False  # checked, never launched: it makes no output

    def unmade(self, ref: str) -> str:
        """Why `ref`, an output of this dry-run stage, cannot be read."""
        return (
            f"'{ref}': stage '{self.id}' is a dry run (dry_run: true): it is checked, never "
            "run, so it makes no output"
        )


class PlanState:
    """Everything the planning passes share; findings point into the pipeline file."""

    def __init__(
        self,
        pf: PipelineFile,
        entries: list[StepEntry],
        graph: TypeGraph,
        root: Path,
        read_config: ReadConfig,
    ) -> None:
        self.pf, self.entries, self.graph, self.read_config = pf, entries, graph, read_config
        self.model = pf.model
        self.plan = Plan(self.model.name, pf.path, root, lineage=self.model.lineage.model_dump())
        self.stages: dict[str, StageDraft] = {}
        self.order_hint: list[str] = []  # file order, inserted converters after their source
        self.used: set[tuple[str, str]] = set()  # outputs some stage or target consumes

    def error(self, code: str, message: str, *keys: Any, fix: str | None = None) -> None:
        self.plan.findings.append(self.pf.finding(code, message, *keys, fix=fix))

    def warn(self, code: str, message: str, *keys: Any, fix: str | None = None) -> None:
        self.plan.findings.append(self.pf.finding(code, message, *keys, fix=fix, severity=WARNING))

    def make_stage(
        self, sid: str, index: int | None, entry: StepEntry, config: Path, overrides: list[str]
    ) -> StageDraft:
        """A stage draft; StepsError when its config does not compile with the overrides."""
        values = self.read_config(config, list(overrides), entry)
        consumes = {str(p.get("name")): p for p in entry.consumes}
        produces = {str(p.get("name")): p for p in entry.produces}
        return StageDraft(
            sid,
            index,
            entry,
            config,
            list(overrides),
            values,
            consumes,
            produces,
            {n: self.narrow(p, values) for n, p in consumes.items()},
            {n: self.narrow(p, values) for n, p in produces.items()},
        )

    def narrow(self, port: dict, values: ConfigValues) -> str:
        """A port's type, narrowed by its `type_key` when that key names a subtype."""
        base = str(port.get("type", ""))
        key = port.get("type_key")
        if key:
            value = mapped_type(port, values.get(key))
            if isinstance(value, str) and value in self.graph and self.graph.is_a(value, base):
                return value
        return base

    def reaches(self, have: str, want: str) -> bool:
        """A `have` fits `want` directly or through one converter."""
        return self.graph.is_a(have, want) or any(
            self.graph.is_a(c.target, want) for c in self.graph.conversions(have)
        )


def suggest(word: str, options: list[str]) -> str:
    """The fix text for a mistyped name: the close ones, else the whole list."""
    return did_you_mean(word, options, 3, otherwise=f"one of: {', '.join(options)}")
