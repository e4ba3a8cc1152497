"""The plan a pipeline file resolves to: what `plan` prints and `pipeline run` executes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from catalog.errors import Finding, has_errors


@dataclass
class Binding:
    """What one port of a stage is bound to; `type` is the type flowing on the edge."""

    port: str
    type: str
    value: str
    source: str  # "inputs.<name>", "<stage>.<port>", "config" or "planned"
    hub: bool = False

    @property
    def producer(self) -> str | None:
        if self.source in ("config", "planned") or self.source.startswith("inputs."):
            return None
        return self.source.split(".", 1)[0]

    def to_dict(self) -> dict:
        return {"type": self.type, "value": self.value, "source": self.source, "hub": self.hub}


@dataclass
class PlannedStage:
    id: str
    step: str
    version: str
    step_dir: Path
    runner: str
    config: Path
    overrides: list[str]
    inserted: bool = False
    line: int | None = None
    dry_run: bool = False  # `dry_run: true`: checked by `run --dry-run`, never launched
    inputs: dict[str, Binding] = field(default_factory=dict)
    outputs: dict[str, Binding] = field(default_factory=dict)

    @property
    def after(self) -> list[str]:
        return sorted({b.producer for b in self.inputs.values() if b.producer})

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "step": self.step,
            "version": self.version,
            "runner": self.runner,
            "config": str(self.config),
            "overrides": self.overrides,
            "inserted": self.inserted,
            "dry_run": self.dry_run,
            "after": self.after,
            "inputs": {k: b.to_dict() for k, b in self.inputs.items()},
            "outputs": {k: b.to_dict() for k, b in self.outputs.items()},
        }


@dataclass
class Edge:
    source: str
    target: str
    type: str
    accepts: str

    def to_dict(self) -> dict:
        return {"from": self.source, "to": self.target, "type": self.type, "accepts": self.accepts}


@dataclass
class Plan:
    name: str
    file: Path
    root: Path
    stages: list[PlannedStage] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    targets: dict[str, Binding] = field(default_factory=dict)
    inputs: dict[str, Binding] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    lineage: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.findings)

    def stage(self, stage_id: str) -> PlannedStage:
        return next(s for s in self.stages if s.id == stage_id)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "file": str(self.file),
            "root": str(self.root),
            "inputs": {k: b.to_dict() for k, b in self.inputs.items()},
            "stages": [s.to_dict() for s in self.stages],
            "edges": [e.to_dict() for e in self.edges],
            "targets": {k: b.to_dict() for k, b in self.targets.items()},
            "findings": [f.to_dict() for f in self.findings],
        }
