"""The planner's contact with the file system: pipeline inputs (paths relative to the pipeline
file, or a hub id for an HF-typed input) and stage configs (a name in the step's config/
folder, or a YAML path relative to the pipeline file).
"""

from __future__ import annotations

import os
from pathlib import Path

from catalog.artifact_paths import absolute, is_hub_id
from catalog.discovery import StepEntry
from catalog.pipeline import UNSET, PipelineFile
from catalog.planner.model import Binding
from catalog.planner.state import PlanState, suggest

HF_ROOT = "hf_checkpoint"


def load_inputs(state: PlanState) -> None:
    """Bind each declared input; a path that is not there yet is a warning."""
    for name, inp in state.model.inputs.items():
        where = ("inputs", name)
        if inp.type not in state.graph:
            state.error(
                "E-PIPELINE-TYPE-UNKNOWN",
                f"input '{name}': unknown artifact type '{inp.type}'",
                *where,
                "type",
                fix=suggest(inp.type, sorted(state.graph.types)),
            )
            continue
        hub = False
        if inp.path == UNSET:
            value = UNSET
            state.warn(
                "W-PIPELINE-INPUT-UNSET",
                f"input '{name}' has no path yet (???)",
                *where,
                "path",
                fix=f"set inputs.{name}.path to a {inp.type}",
            )
        elif state.graph.is_a(inp.type, HF_ROOT) and is_hub_id(inp.path, state.pf.folder):
            value, hub = inp.path, True
        else:
            value = absolute(inp.path, state.pf.folder)
            if not os.path.exists(value):
                state.warn(
                    "W-PIPELINE-INPUT-PATH",
                    f"input '{name}': {value} does not exist",
                    *where,
                    "path",
                    fix="create it first or fix the path (relative to the pipeline file)",
                )
        state.plan.inputs[name] = Binding(name, inp.type, value, f"inputs.{name}", hub)


def config_path(config: str | None, entry: StepEntry, pf: PipelineFile) -> Path:
    """The YAML file a stage's `config:` names (the step's default config when absent)."""
    if config is None:
        run = entry.data.get("run", {})
        config = run.get("default_config", "default") if isinstance(run, dict) else "default"
    if "/" in config or config.endswith((".yaml", ".yml")):
        return Path(absolute(config, pf.folder))
    return entry.config_path(config)


def stage_config(state: PlanState, index: int, entry: StepEntry) -> Path | None:
    """The config file of the file's stage `index`, or None after reporting that it is absent."""
    spec = state.model.stages[index]
    path = config_path(spec.config, entry, state.pf)
    if path.is_file():
        return path
    names = entry.config_names()
    state.error(
        "E-PIPELINE-CONFIG",
        f"stage '{spec.id}': config '{spec.config}' not found for {entry.id} ({path})",
        "stages",
        index,
        "config",
        fix=suggest(spec.config or "", names) if names else "give a YAML path",
    )
    return None


def config_value_ref(value: str, config_file: Path) -> str:
    """A `config:<value>` reference for a path or hub id a config file holds (a path is read
    relative to that file; a hub id stays as it is)."""
    folder = config_file.parent
    return f"config:{value if is_hub_id(value, folder) else absolute(value, folder)}"
