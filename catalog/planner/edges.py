"""Type checks on every edge and target, inserting a converter where only `convert_to` fits.

An inserted converter (`<source>__to_<type>`) runs once however many consumers need it; its
other inputs come from the producer (the reference model is the policy the training started
from), from the file's `converters:` settings, or from the converter's config.
"""

from __future__ import annotations

from catalog.config_values import MISSING
from catalog.discovery import resolve
from catalog.errors import StepsError
from catalog.pipeline import Target
from catalog.planner.inputs import config_path, config_value_ref
from catalog.planner.model import Binding
from catalog.planner.state import PlanState, StageDraft, suggest


def check_edges(state: PlanState) -> None:
    """Fit every wired input of the file's stages (inserted converters are fitted already)."""
    for sid in list(state.order_hint):
        st = state.stages[sid]
        if st.index is None:
            continue
        for port, (ref, have) in list(st.wired.items()):
            where = ("stages", st.index, "inputs", port)
            got = fit(state, ref, have, st.types_in[port], f"{sid}.{port}", where)
            if got is not None:
                st.wired[port] = got


def fit(
    state: PlanState, ref: str, have: str, want: str, dest: str, where: tuple
) -> tuple[str, str] | None:
    """Check one edge; returns the (possibly converted) source, or None after a finding."""
    g = state.graph
    if g.is_a(have, want):
        return ref, have
    if any(g.is_a(c.target, want) for c in g.conversions(have)):
        try:
            return insert_converter(state, ref, have, want, where)
        except StepsError as exc:
            state.error("E-PIPELINE-CONVERTER", exc.finding.message, *where, fix=exc.finding.fix)
            return None
    if g.is_a(want, have):
        state.warn(
            "W-PIPELINE-TYPE-NARROW",
            f"{ref} ({have}) -> {dest} ({want}): the producer's type is broader; the rows are "
            "checked against the contract when the stage runs",
            *where,
            fix=_narrow_fix(state, ref, want),
        )
        return ref, have
    state.error(
        "E-PIPELINE-TYPE",
        f"{ref} ({have}) -> {dest} ({want}): a {have} is not a {want} and no converter in "
        f"{g.path.name} turns one into it",
        *where,
        fix=_narrow_fix(state, ref, want),
    )
    return None


def _narrow_fix(state: PlanState, ref: str, want: str) -> str:
    sid, _, port = ref.partition(".")
    src = state.stages.get(sid)
    spec = src.produces.get(port, {}) if src else {}
    if spec.get("type_key") and want in state.graph.subtypes(str(spec.get("type"))):
        return f"add the override {spec['type_key']}={want} to stage '{sid}'"
    return f"wire a source of type {want}"


def insert_converter(
    state: PlanState, src_ref: str, src_type: str, want: str, where: tuple
) -> tuple[str, str]:
    """The (ref, type) of `src_ref` converted to `want`, inserting the converter once."""
    g = state.graph
    conv = next(c for c in g.conversions(src_type) if g.is_a(c.target, want))
    src_id = src_ref[len("inputs.") :] if src_ref.startswith("inputs.") else src_ref.split(".")[0]
    cid = f"{src_id}__to_{conv.target}"
    if cid in state.stages:
        return f"{cid}.{_out_port(state, state.stages[cid], conv.target)}", conv.target
    entry = resolve(conv.via, state.entries)  # StepsError: reported by `fit`
    settings = state.model.converters.get(entry.id) or state.model.converters.get(conv.via)
    config = config_path(settings.config if settings else None, entry, state.pf)
    overrides = list(settings.overrides) if settings else []
    st = state.make_stage(cid, None, entry, config, overrides)
    in_port = next((p for p, t in st.types_in.items() if g.is_a(src_type, t)), None)
    out_port = _out_port(state, st, conv.target)
    if in_port is None or out_port is None:
        raise StepsError(
            "E-PIPELINE-CONVERTER",
            f"converter {entry.id} has no input accepting {src_type} or no {conv.target} output",
            fix=f"fix {entry.id}'s step.toml or types.toml",
        )
    st.wired[in_port] = (src_ref, src_type)
    _converter_extras(state, st, src_ref, where)
    state.stages[cid] = st
    hint = state.order_hint
    hint.insert(hint.index(src_id) + 1 if src_id in hint else 0, cid)
    return f"{cid}.{out_port}", conv.target


def _out_port(state: PlanState, st: StageDraft, target: str) -> str | None:
    return next((p for p, t in st.types_out.items() if state.graph.is_a(t, target)), None)


def _converter_extras(state: PlanState, conv: StageDraft, src_ref: str, where: tuple) -> None:
    """The converter's other inputs: an override in `converters:` wins; then the producer's own
    input of the same type, or the producer's config value for it; then the converter's config."""
    producer = state.stages.get(src_ref.split(".", 1)[0])
    for port, spec in conv.consumes.items():
        keys = spec.get("config_keys", [])
        if port in conv.wired or not spec.get("required", True):
            continue
        if any(conv.values.set_by(k) for k in keys):
            continue
        want = conv.types_in[port]
        source = _from_producer(state, producer, want) if producer is not None else None
        if source is not None:
            conv.wired[port] = source
            continue
        if any(conv.values.get(k) is not MISSING for k in keys):
            continue
        key = keys[0] if keys else port
        value = "<HF hub id or folder>" if spec.get("parameter") else "..."
        state.error(
            "E-PIPELINE-INPUT-MISSING",
            f"inserted stage '{conv.id}' ({conv.entry.id}): required input '{port}' ({want}) "
            "has no source",
            *where,
            fix=f"set it under converters: {{{conv.entry.id}: {{overrides: [{key}={value}]}}}}",
        )


def _from_producer(state: PlanState, producer: StageDraft, want: str) -> tuple[str, str] | None:
    """A source of type `want` among the producer's wired inputs, else its config's value."""
    g = state.graph
    for ref, t in producer.wired.values():
        if g.is_a(t, want):
            return ref, t
    for pport, pspec in producer.consumes.items():
        if not g.is_a(producer.types_in[pport], want):
            continue
        for key in pspec.get("config_keys", []):
            v = producer.values.get(key)
            if isinstance(v, str):
                return config_value_ref(v, producer.config), want
    return None


def targets(state: PlanState) -> None:
    """Each target names an output; a typed target may insert a converter."""
    for i, t in enumerate(state.model.targets):
        ref, want = (t, None) if not isinstance(t, Target) else (t.output, t.type)
        where = ("targets", i)
        sid, _, port = ref.partition(".")
        if sid not in state.stages or not port:
            if sid not in {s.id for s in state.model.stages}:
                state.error(
                    "E-PIPELINE-REF",
                    f"target '{ref}': no stage '{sid}'",
                    *where,
                    fix=suggest(sid, list(state.stages)),
                )
            elif not port:
                state.error("E-PIPELINE-REF", f"target '{ref}' must name '<stage>.<port>'", *where)
            continue
        st = state.stages[sid]
        if st.dry_run:
            fix = f"name an output of a stage that runs, or drop `dry_run: true` from '{sid}'"
            state.error("E-PIPELINE-REF", f"target {st.unmade(ref)}", *where, fix=fix)
            continue
        if port not in st.types_out:
            state.error(
                "E-PIPELINE-REF",
                f"target '{ref}': {st.entry.id} has no output '{port}'",
                *where,
                fix=suggest(port, list(st.types_out)),
            )
            continue
        have = st.types_out[port]
        if want is not None and want not in state.graph:
            state.error(
                "E-PIPELINE-TYPE-UNKNOWN",
                f"target '{ref}': unknown type '{want}'",
                *where,
                fix=suggest(want, sorted(state.graph.types)),
            )
            continue
        state.used.add((sid, port))
        got = fit(state, ref, have, want or have, "target", where)
        if got is not None:
            state.plan.targets[got[0]] = Binding(got[0].split(".", 1)[1], got[1], "", got[0])
