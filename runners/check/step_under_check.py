"""One step as the `check` gate sees it, and where in its step.toml a finding points."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catalog.discovery import StepEntry
from catalog.manifest import StepManifest
from catalog.tomlfile import line_of


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
