"""The stages the file lists and how their inputs are wired (`inputs.<name>`, `<stage>.<port>`
or a bare `<stage>` with one fitting output); a required input nothing feeds is reported."""

from __future__ import annotations

from collections.abc import Callable

from catalog.config_values import MISSING
from catalog.discovery import resolve
from catalog.errors import Finding, StepsError
from catalog.planner.inputs import stage_config
from catalog.planner.state import PlanState, suggest

DRY_RUN_FIX = "read what stage '{sid}' reads, or drop `dry_run: true` from it to run it"


def load_stages(state: PlanState) -> None:
    """Resolve each stage's step and compile its config (with its overrides)."""
    seen: dict[str, int] = {}
    for i, st in enumerate(state.model.stages):
        if st.id in seen:
            state.error(
                "E-PIPELINE-DUPLICATE-ID",
                f"stage id '{st.id}' is used twice (first at stage {seen[st.id] + 1})",
                "stages",
                i,
                "id",
                fix="give every stage its own id",
            )
            continue
        seen[st.id] = i
        try:
            entry = resolve(st.step, state.entries)
        except StepsError as exc:
            state.error(
                "E-PIPELINE-STEP",
                f"stage '{st.id}': {exc.finding.message}",
                "stages",
                i,
                "step",
                fix=exc.finding.fix,
            )
            continue
        config = stage_config(state, i, entry)
        if config is None:
            continue
        try:
            draft = state.make_stage(st.id, i, entry, config, st.overrides)
        except StepsError as exc:
            f = exc.finding
            state.plan.findings.append(
                Finding(
                    "E-PIPELINE-CONFIG",
                    f"stage '{st.id}': {f.message}",
                    f.path or str(state.pf.path),
                    f.line if f.path else state.pf.line("stages", i, "overrides"),
                    fix=f.fix,
                )
            )
            continue
        draft.dry_run = st.dry_run
        state.stages[st.id] = draft
        state.order_hint.append(st.id)


def source_type(state: PlanState, ref: str, want: str, where: tuple) -> tuple[str, str] | None:
    """Resolve a reference to (canonical ref, type), or report why it cannot be."""
    model = state.model
    if ref.startswith("inputs."):
        name = ref[len("inputs.") :]
        if name in state.plan.inputs:
            return ref, state.plan.inputs[name].type
        if name not in model.inputs:
            state.error(
                "E-PIPELINE-REF",
                f"'{ref}': the pipeline has no input '{name}'",
                *where,
                fix=suggest(name, list(model.inputs))
                if model.inputs
                else "declare it under inputs:",
            )
        return None
    sid, _, port = ref.partition(".")
    if sid not in state.stages:
        if sid not in {s.id for s in model.stages}:
            state.error(
                "E-PIPELINE-REF",
                f"'{ref}': no stage '{sid}'",
                *where,
                fix=suggest(sid, [s.id for s in model.stages] + ["inputs.<name>"]),
            )
        return None
    src = state.stages[sid]
    if src.dry_run:
        state.error("E-PIPELINE-REF", src.unmade(ref), *where, fix=DRY_RUN_FIX.format(sid=sid))
        return None
    if port:
        if port not in src.types_out:
            state.error(
                "E-PIPELINE-REF",
                f"'{ref}': step {src.entry.id} has no output '{port}'",
                *where,
                fix=suggest(port, list(src.types_out)) if src.types_out else "it has none",
            )
            return None
        return f"{sid}.{port}", src.types_out[port]
    fits = [p for p, t in src.types_out.items() if state.reaches(t, want)]
    if len(fits) == 1 or (not fits and len(src.types_out) == 1):
        port = fits[0] if fits else next(iter(src.types_out))
        return f"{sid}.{port}", src.types_out[port]
    if not src.types_out:
        state.error("E-PIPELINE-REF", f"'{ref}': step {src.entry.id} has no outputs", *where)
        return None
    names = ", ".join(f"{sid}.{p}" for p in (fits or src.types_out))
    state.error(
        "E-PIPELINE-AMBIGUOUS",
        f"'{ref}' could be any of {names}",
        *where,
        fix="name the port: '<stage>.<port>'",
    )
    return None


def wire(state: PlanState) -> None:
    """Record each `inputs:` entry of each stage as (source ref, type) on the stage."""
    for sid in list(state.order_hint):
        st = state.stages[sid]
        if st.index is None:  # inserted by the planner: no `inputs:` of its own
            continue
        spec = state.model.stages[st.index]
        for port, ref in spec.inputs.items():
            where = ("stages", st.index, "inputs", port)
            st.attempted.add(port)
            if port not in st.consumes:
                if port in st.produces:
                    msg = f"'{port}' is an output of {st.entry.id}; the planner places outputs"
                    fix = "remove it from inputs"
                else:
                    msg = f"step {st.entry.id} consumes no '{port}'"
                    fix = suggest(port, list(st.consumes)) if st.consumes else "it consumes none"
                state.error("E-PIPELINE-PORT", f"stage '{sid}': {msg}", *where, fix=fix)
                continue
            keys = st.consumes[port].get("config_keys", [])
            token = next((t for k in keys if (t := st.values.set_by(k))), None)
            if token:
                state.error(
                    "E-PIPELINE-AMBIGUOUS",
                    f"stage '{sid}': input '{port}' is wired to '{ref}' and also set by the "
                    f"override '{token}'",
                    "stages",
                    st.index,
                    "overrides",
                    fix="keep one of the two",
                )
                continue
            src = source_type(state, ref, st.types_in[port], where)
            if src is not None:
                st.wired[port] = src


def missing(state: PlanState) -> None:
    """A required input that is neither wired nor set in the stage's config is an error."""
    for sid in state.order_hint:
        st = state.stages[sid]
        for port, spec in st.consumes.items():
            if port in st.attempted or not spec.get("required", True):
                continue
            keys = spec.get("config_keys", [])
            if any(st.values.get(k) is not MISSING for k in keys):
                continue
            want = st.types_in[port]
            key = keys[0] if keys else port
            if spec.get("parameter"):  # a value stands in; a converted artifact would not fit
                cands = _candidates(state, sid, want, state.graph.is_a)
                fix = f"give the stage the override {key}=<HF hub id or folder>"
                fix += f", or wire it, e.g. inputs: {{{port}: {cands[0]}}}" if cands else ""
            elif cands := _candidates(state, sid, want, state.reaches):
                fix = f"wire it, e.g. inputs: {{{port}: {cands[0]}}}"
            else:
                fix = (
                    f"declare a pipeline input of type {want} and wire it, or set {key} in "
                    "the config"
                )
            state.error(
                "E-PIPELINE-INPUT-MISSING",
                f"stage '{sid}' ({st.entry.id}): required input '{port}' ({want}) is not "
                f"wired and {st.config.name} leaves {', '.join(keys)} unset",
                "stages",
                st.index,
                "inputs",
                fix=fix,
            )


def _candidates(
    state: PlanState, sid: str, want: str, fits: Callable[[str, str], bool]
) -> list[str]:
    """References of a type that `fits(type, want)` that could feed a stage: pipeline inputs
    first, then outputs of the stages that do not depend on it (wiring those would close a
    loop)."""
    out = [f"inputs.{n}" for n, b in state.plan.inputs.items() if fits(b.type, want)]
    after = _downstream(state, sid)
    return out + [
        f"{o}.{p}"
        for o in state.order_hint
        if o not in after
        for p, t in state.stages[o].types_out.items()
        if fits(t, want)
    ]


def _downstream(state: PlanState, sid: str) -> set[str]:
    """`sid` and every stage that consumes its outputs, directly or through others."""
    found, todo = {sid}, [sid]
    while todo:
        cur = todo.pop()
        for o, st in state.stages.items():
            if o not in found and any(r.split(".", 1)[0] == cur for r, _ in st.wired.values()):
                found.add(o)
                todo.append(o)
    return found
