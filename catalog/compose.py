"""Compose a pipeline in code: the shortest chain of catalog steps from some types to a type.

Breadth-first search over sets of available artifact types: a step applies when every required
input is fed by an available type (`is_a`), and adds what it produces. Converter steps are
ordinary catalog steps here, so a chain reaches `hf_checkpoint` through `convert/megatron_to_hf`.
A produced port with a `type_key` (rl_prep's `output_type`) may yield any subtype of its type;
choosing one adds the override that makes the step produce it. A port whose `type_map` maps the
key's values (a backend switch) yields what the default config selects. A consumed port marked
`parameter` (the converter's HF reference) needs no producer: when the chain has none for it,
the stage gets `<key>=???` for the user to fill with a hub id or folder.
"""

from __future__ import annotations

from collections import deque
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
        return read_config(path, []) if path.is_file() else None
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


def _feeds(have: frozenset[str], want: str, graph: TypeGraph) -> bool:
    return any(graph.is_a(t, want) for t in have)


def _needs_producer(port: dict) -> bool:
    """A required input that no parameter can stand in for."""
    return bool(port.get("required", True)) and not port.get("parameter", False)


def shortest_chain(
    entries: list[StepEntry],
    graph: TypeGraph,
    start: list[str],
    goal: str,
    through: str | None = None,
    *,
    read_config: ReadConfig,
) -> list[Action]:
    """The fewest steps that turn `start` types into a `goal` (passing `through` if given)."""
    for t in [*start, goal]:
        require_type(graph, t)
    via = resolve(through, entries).id if through else None
    acts = actions(entries, graph, read_config)
    first = (frozenset(start), via is None)
    if first[1] and _feeds(first[0], goal, graph):
        raise StepsError(
            "E-COMPOSE-TRIVIAL",
            f"{goal} is already among the starting types",
            fix="add --through STEP to name a step the chain must pass",
            exit_code=2,
        )
    queue: deque = deque([(first, [])])
    seen = {first}
    while queue:
        (have, done), path = queue.popleft()
        if len(path) >= MAX_STEPS:
            break
        for a in acts:
            ins = [p for p in a.entry.consumes if _needs_producer(p)]
            if not all(_feeds(have, str(p.get("type")), graph) for p in ins):
                continue
            new = have | {t for _, t in a.produces}
            state = (frozenset(new), done or a.step == via)
            chain = [*path, a]
            made = frozenset(t for _, t in a.produces)
            if state[1] and _feeds(made, goal, graph):
                return chain
            if state in seen:
                continue
            seen.add(state)
            queue.append((state, chain))
    hint = f" through {via}" if via else ""
    raise StepsError(
        "E-COMPOSE-NO-CHAIN",
        f"no chain of catalog steps turns {', '.join(start)} into {goal}{hint}",
        fix="add a starting type with --from (e.g. hf_checkpoint for a policy), or check "
        "`python -m steps list --produces TYPE`",
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
    """A pipeline file (as data) running `chain`: inputs named by type, explicit wiring."""
    inputs = {t: {"type": t, "path": "???"} for t in start}
    sources: list[tuple[str, str]] = [(f"inputs.{t}", t) for t in start]  # (ref, type)
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
            want, required = str(p.get("type")), p.get("required", True)
            made = [
                r
                for r, t in reversed(sources)
                if graph.is_a(t, want) and "." in r and not r.startswith("inputs.")
            ]
            given = [r for r, t in sources if graph.is_a(t, want) and r.startswith("inputs.")]
            pick = (made or given)[:1] if required else made[:1]
            if pick:
                wiring[str(p.get("name"))] = pick[0]
            elif required and p.get("parameter") and p.get("config_keys"):
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


def write_pipeline(data: dict, path: Path | None) -> str:
    """The YAML text; written atomically to `path` when given."""
    import yaml

    head = (
        "# Composed by `python -m steps compose`; replace each ??? (an input's path, or a\n"
        "# parameter override such as hf_model_id: an HF hub id or folder),\n"
        "# then: python -m steps plan THIS_FILE\n"
    )
    text = head + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    if path is not None:
        write_atomic(path, text)
    return text
