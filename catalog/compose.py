"""Compose a pipeline in code: the best chain of catalog steps from the types you have to one.

Breadth-first over what the steps so far made. Each required input comes from an earlier
step's output, else a starting type (one port per step), else the chain adds it (path ???); a
`parameter` port needs no producer. A chain ends with a step that makes the goal from every
starting type; best is fewest steps, then added inputs, then overrides. A `type_key` port may
yield any subtype (choosing one adds its override); a `type_map` port yields what the default
config selects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from catalog.atomic_write import write_atomic
from catalog.config_values import ConfigValues, ReadConfig
from catalog.discovery import StepEntry, resolve
from catalog.errors import StepsError
from catalog.types import TypeGraph, mapped_type, require_type

MAX_STEPS = 8


@dataclass(frozen=True)
class Action:
    """One step with a choice of produced subtypes (and the overrides that make that choice)."""

    entry: StepEntry
    overrides: tuple[str, ...]
    produces: tuple[tuple[str, str], ...]  # (port, type)

    @property
    def step(self) -> str:
        return self.entry.id


def _default_values(entry: StepEntry, read_config: ReadConfig) -> ConfigValues | None:
    run = entry.data.get("run", {})
    name = run.get("default_config", "default") if isinstance(run, dict) else "default"
    path = entry.config_path(name)
    try:
        return read_config(path, [], entry) if path.is_file() else None
    except StepsError:
        return None


def actions(entries: list[StepEntry], graph: TypeGraph, read_config: ReadConfig) -> list[Action]:
    """Every (step, produced-subtype choice); the default config's choice comes first."""
    out: list[Action] = []
    for e in entries:
        variants: list[tuple[tuple[str, ...], list[tuple[str, str]]]] = [((), [])]
        values = None
        for port in e.produces:
            name, base, key = str(port.get("name")), str(port.get("type")), port.get("type_key")
            choices: list[tuple[str | None, str]] = [(None, base)]
            if key:
                values = values or _default_values(e, read_config)
                current = mapped_type(port, values.get(key)) if values else None
                if isinstance(current, str) and current in graph and graph.is_a(current, base):
                    choices = [(None, current)]
                if not port.get("type_map"):  # a mapped key (a backend) needs more overrides
                    choices += [(t, t) for t in graph.subtypes(base) if t != choices[0][1]]
            variants = [
                ((*ov, f"{key}={t}") if t else ov, [*ps, (name, ty)])
                for ov, ps in variants
                for t, ty in choices
            ]
        out += [Action(e, ov, tuple(ps)) for ov, ps in variants if ps]
    return out


@dataclass(frozen=True)
class Chain:
    """Steps that turn the starting types into the goal, and how many inputs it adds: required
    inputs that neither a starting type nor an earlier step gives (a policy to train, say)."""

    actions: tuple[Action, ...]
    added: int

    @property
    def steps(self) -> list[str]:
        return [a.step for a in self.actions]

    def rank(self) -> tuple[int, int, int]:
        """Fewest steps, then fewest added inputs, then fewest overrides (the defaults' data)."""
        return (len(self.actions), self.added, sum(len(a.overrides) for a in self.actions))


Made = tuple[tuple[str, frozenset[str]], ...]  # (type, the starting types it comes from)


def _fed(a: Action, made: Made, start: list[str], graph: TypeGraph) -> tuple[frozenset, int]:
    """(the starting types this step's outputs come from, inputs it needs that nothing gives).
    An input comes from the latest earlier output that fits (which may feed several ports:
    train and validation), else a starting type (one port of a step: a policy and a reward
    model are two models), else the chain adds it; a parameter takes a value instead."""
    carried: set[str] = set()
    claimed: set[str] = set()
    added = 0
    for p in a.entry.consumes:
        want = str(p.get("type"))
        if not p.get("required", True):
            continue
        fed = next((c for t, c in reversed(made) if graph.is_a(t, want)), None)
        given = next((t for t in start if t not in claimed and graph.is_a(t, want)), None)
        if fed is not None:
            carried |= fed
        elif given is not None:
            claimed.add(given)
            carried.add(given)
        elif not p.get("parameter"):
            added += 1
    return frozenset(carried), added


def find_chains(
    entries: list[StepEntry],
    graph: TypeGraph,
    start: list[str],
    goal: str,
    through: str | None = None,
    *,
    read_config: ReadConfig,
) -> list[Chain]:
    """The shortest chains (up to MAX_STEPS) whose last step makes a `goal`, that pass
    `through` and make it from every starting type, best first."""
    via = resolve(through, entries).id if through else None
    acts = actions(entries, graph, read_config)
    need = frozenset(start)
    empty: Made = ()
    best_added: dict[tuple, int] = {}
    layer: list[tuple[Made, bool, tuple[Action, ...], int]] = [(empty, via is None, (), 0)]
    found: list[Chain] = []
    for _ in range(MAX_STEPS):
        if found:
            break
        nxt = []
        for made, done, path, added in layer:
            for a in acts:
                carried, more = _fed(a, made, start, graph)
                now = (*made, *((t, carried) for _, t in a.produces))
                chain, cost, passed = (*path, a), added + more, done or a.step == via
                makes = any(graph.is_a(t, goal) for _, t in a.produces)
                if passed and makes and need <= carried:
                    found.append(Chain(chain, cost))
                key = (frozenset(now), passed)
                if best_added.get(key, cost + 1) <= cost:
                    continue
                best_added[key] = cost
                nxt.append((now, passed, chain, cost))
        layer = nxt
    return sorted(found, key=Chain.rank)  # stable: ties keep the order found


def best_chains(
    entries: list[StepEntry],
    graph: TypeGraph,
    start: list[str],
    goal: str,
    through: str | None = None,
    *,
    read_config: ReadConfig,
) -> list[Chain]:
    """The best chains from `start` types to a `goal` (passing `through` if given): the first
    is the one to use, the rest as short and with other steps."""
    for t in [*start, goal]:
        require_type(graph, t)
    if through is None and all(graph.is_a(t, goal) for t in start):
        raise StepsError(
            "E-COMPOSE-TRIVIAL",
            f"{goal} is what you start from: no step is needed",
            fix=f"add what a step makes {goal} from to --from (e.g. --from data_blend,{goal}), "
            "or --through STEP to name a step the chain must pass",
            exit_code=2,
        )
    chains = find_chains(entries, graph, start, goal, through, read_config=read_config)
    if chains:
        unique: dict[tuple, Chain] = {}
        for c in chains:
            unique.setdefault(tuple(c.steps), c)
        return list(unique.values())
    hint = f" through {resolve(through, entries).id}" if through else ""
    read = {str(p.get("type")) for e in entries for p in e.consumes}
    unread = [t for t in start if not any(graph.is_a(t, r) for r in read)]
    if unread:
        raise StepsError(
            "E-COMPOSE-NO-CHAIN",
            f"no catalog step reads {', '.join(unread)}, so no chain to {goal} can start there",
            fix=f"drop {', '.join(unread)} from --from (`python -m steps list --types` shows "
            "what each step reads)",
            exit_code=1,
        )
    makes = {t for a in actions(entries, graph, read_config) for _, t in a.produces}
    if not any(graph.is_a(t, goal) for t in makes):
        raise StepsError(
            "E-COMPOSE-NO-CHAIN",
            f"no catalog step makes {goal}: a pipeline starts from it",
            fix=f"put {goal} in --from and ask --to for what a step makes from it "
            f"(`python -m steps list --consumes {goal}`)",
            exit_code=1,
        )
    raise StepsError(
        "E-COMPOSE-NO-CHAIN",
        f"no chain of catalog steps turns {', '.join(start)} into {goal}{hint}",
        fix=f"check which steps make {goal}: `python -m steps list --produces {goal}`",
        exit_code=1,
    )


def pipeline_data(
    chain: list[Action],
    graph: TypeGraph,
    start: list[str],
    goal: str,
    name: str,
    config: str | None = None,
) -> dict:
    """A pipeline file (as data) running `chain`, wired as the search fed it: inputs named by
    what their first reader calls them (a required input nothing gives is added, path ???)."""
    inputs: dict[str, dict] = {}  # the inputs named so far
    unnamed = list(start)  # starting types no stage has read yet
    sources: list[tuple[str, str]] = []  # (ref, type) made by the stages so far
    stages: list[dict] = []
    ids: set[str] = set()
    for a in chain:
        sid = base = a.step.rsplit("/", 1)[-1]
        n = 2
        while sid in ids:
            sid, n = f"{base}_{n}", n + 1
        ids.add(sid)
        wiring: dict[str, str] = {}
        overrides = list(a.overrides)
        for p in a.entry.consumes:
            port, want = str(p.get("name")), str(p.get("type"))
            made = [r for r, t in reversed(sources) if graph.is_a(t, want)]
            if made or not p.get("required", True):
                wiring.update({port: made[0]} if made else {})
                continue
            free = [
                n
                for n, i in inputs.items()
                if graph.is_a(i["type"], want) and f"inputs.{n}" not in wiring.values()
            ]
            fresh = next((t for t in unnamed if graph.is_a(t, want)), None)
            if free and (fresh is None or p.get("parameter")):
                wiring[port] = f"inputs.{free[0]}"
            elif fresh is not None or not p.get("parameter"):
                text = "" if fresh is not None else str(p.get("description", "")).strip()
                if fresh is not None:
                    unnamed.remove(fresh)
                new = port if port not in inputs else f"{sid}_{port}"
                inputs[new] = {"type": fresh or want, "path": "???"}
                inputs[new].update({"description": text} if text else {})
                wiring[port] = f"inputs.{new}"
            elif p.get("config_keys"):  # a parameter nothing gives: a value to fill in
                overrides.append(f"{p['config_keys'][0]}=???")
        stage: dict = {"id": sid, "step": a.step}
        if config and config in a.entry.config_names():
            stage["config"] = config
        if overrides:
            stage["overrides"] = overrides
        stage["inputs"] = wiring
        stages.append(stage)
        sources += [(f"{sid}.{port}", t) for port, t in a.produces]
    target = next(r for r, t in reversed(sources) if graph.is_a(t, goal))
    return {
        "name": name,
        "description": f"composed: {', '.join(start)} -> {goal}",
        "inputs": inputs,
        "stages": stages,
        "targets": [target],
    }


def to_fill(data: dict) -> list[str]:
    """Each ??? a composed pipeline leaves for the user, as where and what."""
    out = [
        f"inputs.{n}.path ({i['type']}{': ' + i['description'] if i.get('description') else ''})"
        for n, i in data["inputs"].items()
        if i.get("path") == "???"
    ]
    out += [
        f"stage {s['id']}: {o.split('=', 1)[0]}=<HF hub id or folder>"
        for s in data["stages"]
        for o in s.get("overrides", [])
        if o.endswith("=???")
    ]
    return out


def write_pipeline(data: dict, path: Path | None, fill: list[str] | None = None) -> str:
    """The YAML text, led by what to fill in; written atomically to `path` when given."""
    import yaml

    head = ["# Composed by `python -m steps compose`."]
    if fill:
        head += [
            "# Fill in each ??? before `pipeline run` (a path is relative to this file):",
            *(f"#   {f}" for f in fill),
        ]
    head.append("# Then: python -m steps plan THIS_FILE")
    text = "\n".join(head) + "\n" + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    if path is not None:
        write_atomic(path, text)
    return text
