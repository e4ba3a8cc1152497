"""Plan a pipeline: resolve steps, type-check every edge, insert converters, place outputs.

Runs nothing; every problem is a `Finding` pointing into the pipeline file. An edge fits when
the producer's type `is_a` the consumer's; one reached only through `convert_to` gets the
converter as a stage of its own (`<producer>__to_<type>`). Each output lives at
`<root>/<stage>/<port>`. The passes: `inputs`, `stages` (and wiring), `edges` (types,
converters, targets), `order` (cycles, order, layout); `state` is the plan while it is built.
"""

from __future__ import annotations

from pathlib import Path

from catalog.artifact_paths import absolute
from catalog.config_values import ReadConfig
from catalog.discovery import StepEntry
from catalog.errors import has_errors
from catalog.pipeline import PipelineFile
from catalog.planner.edges import check_edges, targets
from catalog.planner.inputs import load_inputs
from catalog.planner.model import Binding, Edge, Plan, PlannedStage
from catalog.planner.order import build, find_cycle
from catalog.planner.stages import load_stages, missing, wire
from catalog.planner.state import PlanState
from catalog.types import TypeGraph

__all__ = ["Binding", "Edge", "Plan", "PlannedStage", "default_root", "plan_pipeline"]


def default_root(pf: PipelineFile, runs_dir: Path) -> Path:
    """The file's `root:` (relative to the file), else `<runs dir>/pipelines/<name>`."""
    if pf.model.root:
        return Path(absolute(pf.model.root, pf.folder))
    return runs_dir / "pipelines" / pf.model.name


def plan_pipeline(
    pf: PipelineFile,
    entries: list[StepEntry],
    graph: TypeGraph,
    root: Path,
    read_config: ReadConfig,
) -> Plan:
    """The resolved plan; check `plan.ok` (errors are in `plan.findings`, warnings too)."""
    state = PlanState(pf, entries, graph, Path(root), read_config)
    load_inputs(state)
    load_stages(state)
    wire(state)
    missing(state)
    loop = find_cycle(state)
    if loop:
        state.error(
            "E-PIPELINE-CYCLE",
            "stages form a cycle: " + " -> ".join(loop),
            "stages",
            state.stages[loop[0]].index,
            "inputs",
            fix="a stage cannot consume its own output, directly or through other stages",
        )
    if has_errors(state.plan.findings):
        return state.plan
    check_edges(state)
    targets(state)
    if not has_errors(state.plan.findings):
        build(state)
    return state.plan
