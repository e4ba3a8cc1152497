"""One step as the `check` gate sees it, and the checks of its folder and manifest: the required
files, the id and category against the folder, port types, error checks, local references."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catalog.did_you_mean import with_suggestion
from catalog.discovery import StepEntry
from catalog.errors import WARNING, Finding
from catalog.manifest import StepManifest
from catalog.tomlfile import line_of
from catalog.types import TypeGraph

REQUIRED_FILES = ("README.md", "step.py", "config/default.yaml", "config/tiny.yaml")


@dataclass
class StepUnderCheck:
    """One step under check: its entry, validated manifest and compiled default config."""

    entry: StepEntry
    manifest: StepManifest | None = None
    default: Any = None  # runners.config.compiler.CompiledConfig
    keys: list[str] = field(default_factory=list)


def manifest_line(entry: StepEntry, *needles: str) -> int | None:
    """The first line of the step.toml holding every needle."""
    return line_of(entry.manifest_path, *needles)


def layout(e: StepEntry) -> list[Finding]:
    """The files every step folder has, and a README that names the step."""
    out = [
        Finding(
            "E-STEP-FILES",
            f"step folder lacks {rel}",
            str(e.dir / rel),
            fix="every step has README.md, step.py, config/default.yaml and config/tiny.yaml",
        )
        for rel in REQUIRED_FILES
        if not (e.dir / rel).is_file()
    ]
    readme = e.dir / "README.md"
    if readme.is_file() and e.id not in readme.read_text(encoding="utf-8", errors="replace"):
        out.append(
            Finding(
                "E-README-ID",
                f"README does not name the step id '{e.id}'",
                str(readme),
                1,
                fix=f"mention `{e.id}` (e.g. in the smoke command `python -m steps run {e.id}`)",
            )
        )
    return out


def identity(e: StepEntry, m: StepManifest) -> list[Finding]:
    out = []
    if m.step.id != e.folder_id:
        out.append(
            Finding(
                "E-STEP-ID",
                f"id '{m.step.id}' differs from the folder '{e.folder_id}'",
                str(e.manifest_path),
                manifest_line(e, "id", m.step.id),
                key="step.id",
                fix=f'set id = "{e.folder_id}" or move the folder',
            )
        )
    out += _runner_kind(e, m)
    first = e.folder_id.split("/", 1)[0]
    if m.step.category != first:
        out.append(
            Finding(
                "E-STEP-CATEGORY",
                f"category '{m.step.category}' differs from the first folder '{first}'",
                str(e.manifest_path),
                manifest_line(e, "category"),
                key="step.category",
                fix=f'set category = "{first}"',
            )
        )
    return out


def port_types(e: StepEntry, m: StepManifest, graph: TypeGraph) -> list[Finding]:
    return [
        Finding(
            "E-TYPE-UNKNOWN",
            f"{kind} '{p.name}': unknown artifact type '{p.type}'",
            str(e.manifest_path),
            manifest_line(e, "type", f'"{p.type}"'),
            key=f"{kind}.{p.name}.type",
            fix=with_suggestion(
                p.type, sorted(graph.types), f"types are declared in {graph.path.name}"
            ),
        )
        for kind, ports in (("consumes", m.consumes), ("produces", m.produces))
        for p in ports
        if p.type not in graph
    ]


def error_checks(e: StepEntry, m: StepManifest, rules: set[str] | None) -> list[Finding]:
    """A step's own `check` for a code names a registered preflight rule (a warning while
    rules land)."""
    if rules is None:
        return []
    return [
        Finding(
            "W-ERRORS-CHECK",
            f"error {err.name}: check '{err.check}' is not a registered preflight rule",
            str(e.manifest_path),
            manifest_line(e, "check", f'"{err.check}"'),
            severity=WARNING,
            key=f"errors.{err.name}.check",
            fix=with_suggestion(
                err.check, sorted(rules), "name a rule from runners.preflight.load_rules()"
            ),
        )
        for err in m.error_specs
        if err.check and err.check not in rules
    ]


def local_references(e: StepEntry, m: StepManifest) -> list[Finding]:
    return [
        Finding(
            "E-REFERENCE-LOCAL",
            f"local reference '{rel}' does not exist",
            str(e.manifest_path),
            manifest_line(e, f'"{rel}"'),
            key="reference.local",
            fix="paths are relative to the step folder: fix or remove the entry",
        )
        for rel in m.reference.local
        if not (e.dir / rel).exists()
    ]


def _runner_kind(e: StepEntry, m: StepManifest) -> list[Finding]:
    """run.runner names a kind this runner knows (a module of runners/kinds)."""
    from runners.kinds import known

    if m.run.runner in known():
        return []
    return [
        Finding(
            "E-RUNNER-KIND",
            f"no runner kind '{m.run.runner}'",
            str(e.manifest_path),
            manifest_line(e, "runner", m.run.runner),
            key="run.runner",
            fix=with_suggestion(m.run.runner, known(), "use one of: " + ", ".join(known())),
        )
    ]
