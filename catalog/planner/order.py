"""Order the stages (graphlib: a cycle is an error, ties keep the file's order) and lay out
the plan: each output at `<root>/<stage>/<port>`, each consumer bound to it."""

from __future__ import annotations

import os
from graphlib import CycleError, TopologicalSorter

from catalog.planner.model import Binding, Edge, PlannedStage
from catalog.planner.state import PlanState


def _dependencies(state: PlanState) -> dict[str, set[str]]:
    return {
        sid: {
            ref.split(".", 1)[0]
            for ref, _ in state.stages[sid].wired.values()
            if not ref.startswith(("inputs.", "config:"))
        }
        for sid in state.order_hint
    }


def find_cycle(state: PlanState) -> list[str] | None:
    """Stages that consume each other's outputs in a loop, as `a -> b -> a` reads (a consumes
    b's output), starting from the first in file order; None when there is no loop."""
    try:
        TopologicalSorter(_dependencies(state)).prepare()
    except CycleError as exc:
        loop = list(reversed(exc.args[1][:-1]))  # graphlib lists producers before consumers
        rank = {s: i for i, s in enumerate(state.order_hint)}
        start = min(range(len(loop)), key=lambda i: rank.get(loop[i], len(rank)))
        loop = loop[start:] + loop[:start]
        return [*loop, loop[0]]
    return None


def topological(state: PlanState) -> list[str]:
    """Stage ids with every producer before its consumers; among ready stages, file order."""
    sorter = TopologicalSorter(_dependencies(state))
    sorter.prepare()  # cycles are reported before ordering
    rank = {s: i for i, s in enumerate(state.order_hint)}
    ready, out = set(sorter.get_ready()), []
    while ready:
        sid = min(ready, key=lambda s: rank.get(s, len(rank)))
        ready.discard(sid)
        out.append(sid)
        sorter.done(sid)
        ready.update(sorter.get_ready())
    return out


def build(state: PlanState) -> None:
    """Fill `state.plan` with the ordered stages, their bindings and edges."""
    plan = state.plan
    root = plan.root
    for sid in topological(state):
        st = state.stages[sid]
        run = st.entry.data.get("run", {})
        ps = PlannedStage(
            sid,
            st.entry.id,
            str(st.entry.meta.get("version", "")),
            st.entry.dir,
            str(run.get("runner", "")) if isinstance(run, dict) else "",
            st.config,
            st.overrides,
            st.index is None,
            state.pf.line("stages", st.index) if st.index is not None else None,
            st.dry_run,
        )
        for port, (ref, t) in st.wired.items():
            edge = Edge(ref, f"{sid}.{port}", t, st.types_in[port])
            if ref.startswith("inputs."):
                b = plan.inputs[ref[len("inputs.") :]]
                ps.inputs[port] = Binding(port, t, b.value, ref, b.hub)
                plan.edges.append(edge)
            elif ref.startswith("config:"):
                value = ref[len("config:") :]
                ps.inputs[port] = Binding(port, t, value, "config", not os.path.isabs(value))
            else:
                psid, pport = ref.split(".", 1)
                ps.inputs[port] = Binding(port, t, str(root / psid / pport), ref)
                state.used.add((psid, pport))
                plan.edges.append(edge)
        for port, t in st.types_out.items():
            ps.outputs[port] = Binding(port, t, str(root / sid / port), "planned")
        plan.stages.append(ps)
    for ref, b in plan.targets.items():
        sid, port = ref.split(".", 1)
        b.value = str(root / sid / port)
    for ps in plan.stages:
        st = state.stages[ps.id]
        for port in ps.outputs:
            if (ps.id, port) not in state.used and st.index is not None and not st.dry_run:
                state.warn(
                    "W-PIPELINE-UNUSED",
                    f"output '{ps.id}.{port}' ({ps.outputs[port].type}) is used by no stage "
                    "and is not a target",
                    "stages",
                    st.index,
                    fix=f"add '{ps.id}.{port}' to targets, or ignore this warning",
                )
