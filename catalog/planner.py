"""Plan a pipeline: resolve steps, type-check every edge, insert converters, place outputs.

Pure: reads the pipeline file, manifests, types and config YAML; runs nothing. Every problem
becomes a `Finding` pointing into the pipeline file; the plan is usable only when none is an
error. An edge is fine when the producer's type `is_a` the consumer's; when the producer's type
reaches it only through `convert_to`, the converter step is inserted as a stage of its own
(`<producer>__to_<type>`, `inserted: true`). Each output lives at `<root>/<stage>/<port>`.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.config_peek import MISSING, ConfigPeek, absolute, sets_key
from catalog.discovery import StepEntry, resolve
from catalog.errors import WARNING, Finding, StepsError, has_errors
from catalog.pipeline import UNSET, PipelineFile, Target
from catalog.types import TypeGraph

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
HF_ROOT = "hf_checkpoint"


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


@dataclass
class _Stage:
    """A stage while planning: its step entry, config view and narrowed port types."""

    id: str
    index: int | None  # position in the file; None when inserted
    entry: StepEntry
    config: Path
    overrides: list[str]
    peek: ConfigPeek
    consumes: dict[str, dict]
    produces: dict[str, dict]
    types_in: dict[str, str]
    types_out: dict[str, str]
    wired: dict[str, tuple[str, str]] = field(default_factory=dict)  # port -> (ref, type)
    attempted: set[str] = field(default_factory=set)  # ports the file wires (even if badly)


def _close(word: str, options: list[str]) -> str:
    near = difflib.get_close_matches(word, options, n=3, cutoff=0.5)
    return f"did you mean {' or '.join(near)}?" if near else f"one of: {', '.join(options)}"


def _narrow(port: dict, peek: ConfigPeek, graph: TypeGraph) -> str:
    """A port's type, narrowed by its `type_key` when that key names a subtype."""
    base = str(port.get("type", ""))
    key = port.get("type_key")
    if key:
        value = peek.get(key)
        if isinstance(value, str) and value in graph and graph.is_a(value, base):
            return value
    return base


def _config_path(config: str | None, entry: StepEntry, pf: PipelineFile) -> Path:
    if config is None:
        run = entry.data.get("run", {})
        config = run.get("default_config", "default") if isinstance(run, dict) else "default"
    if "/" in config or config.endswith((".yaml", ".yml")):
        return Path(absolute(config, pf.folder))
    return entry.config_path(config)


class _Planner:
    def __init__(self, pf: PipelineFile, entries: list[StepEntry], graph: TypeGraph, root: Path):
        self.pf, self.entries, self.graph = pf, entries, graph
        self.model = pf.model
        self.plan = Plan(self.model.name, pf.path, root, lineage=self.model.lineage.model_dump())
        self.stages: dict[str, _Stage] = {}
        self.order_hint: list[str] = []
        self.used: set[tuple[str, str]] = set()

    def error(self, code: str, message: str, *keys: Any, fix: str | None = None) -> None:
        self.plan.findings.append(self.pf.finding(code, message, *keys, fix=fix))

    def warn(self, code: str, message: str, *keys: Any, fix: str | None = None) -> None:
        self.plan.findings.append(self.pf.finding(code, message, *keys, fix=fix, severity=WARNING))

    # -- stages ---------------------------------------------------------------------------
    def make_stage(
        self, sid: str, index: int | None, entry: StepEntry, config: Path, overrides: list[str]
    ) -> _Stage:
        peek = ConfigPeek(config, overrides)
        consumes = {str(p.get("name")): p for p in entry.consumes}
        produces = {str(p.get("name")): p for p in entry.produces}
        return _Stage(
            sid,
            index,
            entry,
            config,
            list(overrides),
            peek,
            consumes,
            produces,
            {n: _narrow(p, peek, self.graph) for n, p in consumes.items()},
            {n: _narrow(p, peek, self.graph) for n, p in produces.items()},
        )

    def load_stages(self) -> None:
        seen: dict[str, int] = {}
        for i, st in enumerate(self.model.stages):
            if st.id in seen:
                self.error(
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
                entry = resolve(st.step, self.entries)
            except StepsError as exc:
                self.error(
                    "E-PIPELINE-STEP",
                    f"stage '{st.id}': {exc.finding.message}",
                    "stages",
                    i,
                    "step",
                    fix=exc.finding.fix,
                )
                continue
            config = _config_path(st.config, entry, self.pf)
            if not config.is_file():
                names = entry.config_names()
                self.error(
                    "E-PIPELINE-CONFIG",
                    f"stage '{st.id}': config '{st.config}' not found for {entry.id} ({config})",
                    "stages",
                    i,
                    "config",
                    fix=_close(st.config or "", names) if names else "give a YAML path",
                )
                continue
            try:
                self.stages[st.id] = self.make_stage(st.id, i, entry, config, st.overrides)
            except StepsError as exc:
                f = exc.finding
                self.plan.findings.append(
                    Finding(
                        "E-PIPELINE-CONFIG",
                        f"stage '{st.id}': {f.message}",
                        f.path,
                        f.line,
                        fix=f.fix,
                    )
                )
                continue
            self.order_hint.append(st.id)

    # -- inputs ---------------------------------------------------------------------------
    def load_inputs(self) -> None:
        for name, inp in self.model.inputs.items():
            if inp.type not in self.graph:
                self.error(
                    "E-PIPELINE-TYPE-UNKNOWN",
                    f"input '{name}': unknown artifact type '{inp.type}'",
                    "inputs",
                    name,
                    "type",
                    fix=_close(inp.type, sorted(self.graph.types)),
                )
                continue
            hub = False
            if inp.path == UNSET:
                value = UNSET
                self.warn(
                    "W-PIPELINE-INPUT-UNSET",
                    f"input '{name}' has no path yet (???)",
                    "inputs",
                    name,
                    "path",
                    fix=f"set inputs.{name}.path to a {inp.type}",
                )
            else:
                value = absolute(inp.path, self.pf.folder)
                if not os.path.exists(value):
                    if self.graph.is_a(inp.type, HF_ROOT) and HUB_ID.match(inp.path):
                        value, hub = inp.path, True
                    else:
                        self.warn(
                            "W-PIPELINE-INPUT-PATH",
                            f"input '{name}': {value} does not exist",
                            "inputs",
                            name,
                            "path",
                            fix="create it first or fix the path (relative to the pipeline file)",
                        )
            self.plan.inputs[name] = Binding(name, inp.type, value, f"inputs.{name}", hub)

    def source_type(self, ref: str, want: str, where: tuple) -> tuple[str, str] | None:
        """Resolve a reference to (canonical ref, type), or report why it cannot be."""
        if ref.startswith("inputs."):
            name = ref[len("inputs.") :]
            if name in self.plan.inputs:
                return ref, self.plan.inputs[name].type
            if name not in self.model.inputs:
                self.error(
                    "E-PIPELINE-REF",
                    f"'{ref}': the pipeline has no input '{name}'",
                    *where,
                    fix=_close(name, list(self.model.inputs))
                    if self.model.inputs
                    else "declare it under inputs:",
                )
            return None
        sid, _, port = ref.partition(".")
        if sid not in self.stages:
            if sid not in {s.id for s in self.model.stages}:
                self.error(
                    "E-PIPELINE-REF",
                    f"'{ref}': no stage '{sid}'",
                    *where,
                    fix=_close(sid, [s.id for s in self.model.stages] + ["inputs.<name>"]),
                )
            return None
        src = self.stages[sid]
        if port:
            if port not in src.types_out:
                self.error(
                    "E-PIPELINE-REF",
                    f"'{ref}': step {src.entry.id} has no output '{port}'",
                    *where,
                    fix=_close(port, list(src.types_out)) if src.types_out else "it has none",
                )
                return None
            return f"{sid}.{port}", src.types_out[port]
        fits = [p for p, t in src.types_out.items() if self.reaches(t, want)]
        if len(fits) == 1 or (not fits and len(src.types_out) == 1):
            port = fits[0] if fits else next(iter(src.types_out))
            return f"{sid}.{port}", src.types_out[port]
        if not src.types_out:
            self.error("E-PIPELINE-REF", f"'{ref}': step {src.entry.id} has no outputs", *where)
            return None
        names = ", ".join(f"{sid}.{p}" for p in (fits or src.types_out))
        self.error(
            "E-PIPELINE-AMBIGUOUS",
            f"'{ref}' could be any of {names}",
            *where,
            fix="name the port: '<stage>.<port>'",
        )
        return None

    def reaches(self, have: str, want: str) -> bool:
        return self.graph.is_a(have, want) or any(
            self.graph.is_a(c.target, want) for c in self.graph.conversions(have)
        )

    def wire(self) -> None:
        for sid in list(self.order_hint):
            st = self.stages[sid]
            spec = self.model.stages[st.index]
            for port, ref in spec.inputs.items():
                where = ("stages", st.index, "inputs", port)
                st.attempted.add(port)
                if port not in st.consumes:
                    if port in st.produces:
                        msg = f"'{port}' is an output of {st.entry.id}; the planner places outputs"
                        fix = "remove it from inputs"
                    else:
                        msg = f"step {st.entry.id} consumes no '{port}'"
                        fix = _close(port, list(st.consumes)) if st.consumes else "it consumes none"
                    self.error("E-PIPELINE-PORT", f"stage '{sid}': {msg}", *where, fix=fix)
                    continue
                token = next(
                    (
                        t
                        for k in st.consumes[port].get("config_keys", [])
                        if (t := sets_key(st.overrides, k))
                    ),
                    None,
                )
                if token:
                    self.error(
                        "E-PIPELINE-AMBIGUOUS",
                        f"stage '{sid}': input '{port}' is wired to '{ref}' and also set by the "
                        f"override '{token}'",
                        "stages",
                        st.index,
                        "overrides",
                        fix="keep one of the two",
                    )
                    continue
                src = self.source_type(ref, st.types_in[port], where)
                if src is not None:
                    st.wired[port] = src

    def missing(self) -> None:
        for sid in self.order_hint:
            st = self.stages[sid]
            for port, spec in st.consumes.items():
                if port in st.attempted or not spec.get("required", True):
                    continue
                keys = spec.get("config_keys", [])
                if any(st.peek.get(k) is not MISSING for k in keys):
                    continue
                want = st.types_in[port]
                cands = [
                    f"inputs.{n}" for n, b in self.plan.inputs.items() if self.reaches(b.type, want)
                ]
                cands += [
                    f"{o}.{p}"
                    for o in self.order_hint
                    if o != sid
                    for p, t in self.stages[o].types_out.items()
                    if self.reaches(t, want)
                ]
                fix = (
                    f"wire it, e.g. inputs: {{{port}: {cands[0]}}}"
                    if cands
                    else f"declare a pipeline input of type {want} and wire it, or set "
                    f"{keys[0] if keys else port} in the config"
                )
                self.error(
                    "E-PIPELINE-INPUT-MISSING",
                    f"stage '{sid}' ({st.entry.id}): required input '{port}' ({want}) is not "
                    f"wired and {st.config.name} leaves {', '.join(keys)} unset",
                    "stages",
                    st.index,
                    "inputs",
                    fix=fix,
                )

    # -- graph ----------------------------------------------------------------------------
    def cycle(self) -> list[str] | None:
        deps = {
            s: {r.split(".", 1)[0] for r, _ in st.wired.values() if not r.startswith("inputs.")}
            for s, st in self.stages.items()
        }
        state: dict[str, int] = {}
        stack: list[str] = []

        def visit(s: str) -> list[str] | None:
            state[s] = 1
            stack.append(s)
            for d in sorted(deps.get(s, ())):
                if state.get(d) == 1:
                    return [*stack[stack.index(d) :], d]
                if d not in state and (found := visit(d)):
                    return found
            stack.pop()
            state[s] = 2
            return None

        for s in self.order_hint:
            if s not in state and (found := visit(s)):
                return found
        return None

    def converter(self, src_ref: str, src_type: str, want: str, where: tuple) -> tuple[str, str]:
        """The (ref, type) of `src_ref` converted to `want`, inserting the converter once."""
        conv = next(c for c in self.graph.conversions(src_type) if self.graph.is_a(c.target, want))
        src_id = (
            src_ref.split(".", 1)[0]
            if not src_ref.startswith("inputs.")
            else (src_ref[len("inputs.") :])
        )
        cid = f"{src_id}__to_{conv.target}"
        if cid in self.stages:
            st = self.stages[cid]
            return f"{cid}.{self._out_port(st, conv.target)}", conv.target
        entry = resolve(conv.via, self.entries)  # StepsError: handled by the caller
        settings = self.model.converters.get(entry.id) or self.model.converters.get(conv.via)
        config = _config_path(settings.config if settings else None, entry, self.pf)
        st = self.make_stage(cid, None, entry, config, list(settings.overrides) if settings else [])
        in_port = next((p for p, t in st.types_in.items() if self.graph.is_a(src_type, t)), None)
        out_port = self._out_port(st, conv.target)
        if in_port is None or out_port is None:
            raise StepsError(
                "E-PIPELINE-CONVERTER",
                f"converter {entry.id} has no input accepting {src_type} "
                f"or no {conv.target} output",
                fix=f"fix {entry.id}'s step.toml or types.toml",
            )
        st.wired[in_port] = (src_ref, src_type)
        self._converter_extras(st, src_ref, where)
        self.stages[cid] = st
        pos = self.order_hint.index(src_id) + 1 if src_id in self.order_hint else 0
        self.order_hint.insert(pos, cid)
        return f"{cid}.{out_port}", conv.target

    def _out_port(self, st: _Stage, target: str) -> str | None:
        return next((p for p, t in st.types_out.items() if self.graph.is_a(t, target)), None)

    def _converter_extras(self, conv: _Stage, src_ref: str, where: tuple) -> None:
        """Other required inputs of an inserted converter come from the producer's own inputs of
        the same type (e.g. the reference model = the policy the training started from)."""
        producer = self.stages.get(src_ref.split(".", 1)[0])
        for port, spec in conv.consumes.items():
            if port in conv.wired or not spec.get("required", True):
                continue
            want = conv.types_in[port]
            if producer is not None:
                for ref, t in producer.wired.values():
                    if self.graph.is_a(t, want):
                        conv.wired[port] = (ref, t)
                        break
                else:
                    for pport, pspec in producer.consumes.items():
                        if not self.graph.is_a(producer.types_in[pport], want):
                            continue
                        for key in pspec.get("config_keys", []):
                            v = producer.peek.get(key)
                            if isinstance(v, str):
                                hub = bool(HUB_ID.match(v)) and not os.path.isabs(v)
                                value = v if hub else absolute(v, producer.config.parent)
                                if hub and os.path.exists(absolute(v, producer.config.parent)):
                                    value = absolute(v, producer.config.parent)
                                conv.wired[port] = (f"config:{value}", want)
                                break
                        if port in conv.wired:
                            break
            if port in conv.wired:
                continue
            if any(conv.peek.get(k) is not MISSING for k in spec.get("config_keys", [])):
                continue
            self.error(
                "E-PIPELINE-INPUT-MISSING",
                f"inserted stage '{conv.id}' ({conv.entry.id}): required input '{port}' ({want}) "
                "has no source",
                *where,
                fix=f"set it under converters: {{{conv.entry.id}: {{overrides: [...]}}}}",
            )

    def check_edges(self) -> None:
        for sid in list(self.order_hint):
            st = self.stages[sid]
            if st.index is None:
                continue
            for port, (ref, have) in list(st.wired.items()):
                where = ("stages", st.index, "inputs", port)
                got = self.fit(ref, have, st.types_in[port], f"{sid}.{port}", where, st)
                if got is not None:
                    st.wired[port] = got

    def fit(
        self, ref: str, have: str, want: str, dest: str, where: tuple, st: _Stage | None = None
    ) -> tuple[str, str] | None:
        """Check one edge; returns the (possibly converted) source, or None after a finding."""
        g = self.graph
        if g.is_a(have, want):
            return ref, have
        if any(g.is_a(c.target, want) for c in g.conversions(have)):
            try:
                return self.converter(ref, have, want, where)
            except StepsError as exc:
                self.error("E-PIPELINE-CONVERTER", exc.finding.message, *where, fix=exc.finding.fix)
                return None
        if g.is_a(want, have):
            self.warn(
                "W-PIPELINE-TYPE-NARROW",
                f"{ref} ({have}) -> {dest} ({want}): the producer's type is broader; the rows are "
                "checked against the contract when the stage runs",
                *where,
                fix=self._narrow_fix(ref, want),
            )
            return ref, have
        self.error(
            "E-PIPELINE-TYPE",
            f"{ref} ({have}) -> {dest} ({want}): a {have} is not a {want} and no converter in "
            f"{g.path.name} turns one into it",
            *where,
            fix=self._narrow_fix(ref, want),
        )
        return None

    def _narrow_fix(self, ref: str, want: str) -> str:
        src = self.stages.get(ref.split(".", 1)[0])
        port = ref.split(".", 1)[1] if "." in ref else ""
        spec = src.produces.get(port) if src else None
        if spec and spec.get("type_key") and want in self.graph.subtypes(str(spec.get("type"))):
            return f"add the override {spec['type_key']}={want} to stage '{src.id}'"
        return f"wire a source of type {want}"

    def targets(self) -> None:
        for i, t in enumerate(self.model.targets):
            ref, want = (t, None) if not isinstance(t, Target) else (t.output, t.type)
            where = ("targets", i)
            sid, _, port = ref.partition(".")
            if sid not in self.stages or not port:
                if sid not in {s.id for s in self.model.stages}:
                    self.error(
                        "E-PIPELINE-REF",
                        f"target '{ref}': no stage '{sid}'",
                        *where,
                        fix=_close(sid, list(self.stages)),
                    )
                elif not port:
                    self.error(
                        "E-PIPELINE-REF", f"target '{ref}' must name '<stage>.<port>'", *where
                    )
                continue
            st = self.stages[sid]
            if port not in st.types_out:
                self.error(
                    "E-PIPELINE-REF",
                    f"target '{ref}': {st.entry.id} has no output '{port}'",
                    *where,
                    fix=_close(port, list(st.types_out)),
                )
                continue
            have = st.types_out[port]
            if want is not None and want not in self.graph:
                self.error(
                    "E-PIPELINE-TYPE-UNKNOWN",
                    f"target '{ref}': unknown type '{want}'",
                    *where,
                    fix=_close(want, sorted(self.graph.types)),
                )
                continue
            self.used.add((sid, port))
            got = self.fit(ref, have, want or have, "target", where)
            if got is not None:
                self.plan.targets[got[0]] = Binding(got[0].split(".", 1)[1], got[1], "", got[0])

    # -- result ---------------------------------------------------------------------------
    def topo(self) -> list[str]:
        done: list[str] = []
        pending = list(self.order_hint)
        while pending:
            for s in pending:
                deps = {
                    r.split(".", 1)[0]
                    for r, _ in self.stages[s].wired.values()
                    if not r.startswith(("inputs.", "config:"))
                }
                if deps <= set(done):
                    done.append(s)
                    pending.remove(s)
                    break
            else:  # pragma: no cover - cycles are reported before ordering
                done += pending
                break
        return done

    def build(self) -> None:
        root = self.plan.root
        for sid in self.topo():
            st = self.stages[sid]
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
                self.pf.line("stages", st.index) if st.index is not None else None,
            )
            for port, (ref, t) in st.wired.items():
                if ref.startswith("inputs."):
                    b = self.plan.inputs[ref[len("inputs.") :]]
                    ps.inputs[port] = Binding(port, t, b.value, ref, b.hub)
                elif ref.startswith("config:"):
                    value = ref[len("config:") :]
                    ps.inputs[port] = Binding(port, t, value, "config", not os.path.isabs(value))
                else:
                    psid, pport = ref.split(".", 1)
                    ps.inputs[port] = Binding(port, t, str(root / psid / pport), ref)
                    self.used.add((psid, pport))
                    self.plan.edges.append(Edge(ref, f"{sid}.{port}", t, st.types_in[port]))
                if ref.startswith("inputs."):
                    self.plan.edges.append(Edge(ref, f"{sid}.{port}", t, st.types_in[port]))
            for port, t in st.types_out.items():
                ps.outputs[port] = Binding(port, t, str(root / sid / port), "planned")
            self.plan.stages.append(ps)
        for ref, b in self.plan.targets.items():
            sid, port = ref.split(".", 1)
            b.value = str(root / sid / port)
        for ps in self.plan.stages:
            st = self.stages[ps.id]
            for port in ps.outputs:
                if (ps.id, port) not in self.used and st.index is not None:
                    self.warn(
                        "W-PIPELINE-UNUSED",
                        f"output '{ps.id}.{port}' ({ps.outputs[port].type}) is used by no stage "
                        "and is not a target",
                        "stages",
                        st.index,
                        fix=f"add '{ps.id}.{port}' to targets, or ignore this warning",
                    )

    def run(self) -> Plan:
        self.load_inputs()
        self.load_stages()
        self.wire()
        self.missing()
        cyc = self.cycle()
        if cyc:
            first = self.stages[cyc[0]]
            self.error(
                "E-PIPELINE-CYCLE",
                "stages form a cycle: " + " -> ".join(cyc),
                "stages",
                first.index,
                "inputs",
                fix="a stage cannot consume its own output, directly or through other stages",
            )
        if has_errors(self.plan.findings):
            return self.plan
        self.check_edges()
        self.targets()
        if not has_errors(self.plan.findings):
            self.build()
        return self.plan


def default_root(pf: PipelineFile, runs_dir: Path) -> Path:
    """The file's `root:` (relative to the file), else `<runs dir>/pipelines/<name>`."""
    if pf.model.root:
        return Path(absolute(pf.model.root, pf.folder))
    return runs_dir / "pipelines" / pf.model.name


def plan_pipeline(pf: PipelineFile, entries: list[StepEntry], graph: TypeGraph, root: Path) -> Plan:
    """The resolved plan; check `plan.ok` (errors are in `plan.findings`, warnings too)."""
    return _Planner(pf, entries, graph, Path(root)).run()
