"""The dry run's look at the first rows of every dataset, judged by the run's own `process_chunk`
(under on_bad_row=skip, only a dataset whose first rows would all be dropped is a finding).

Gym rows are also checked for the fields their agent's resource server reads: found in the Gym
tree's configs and sources (catalog.contracts.gym_routes), else the pinned Gym's table; what cannot
be checked is one W-BLEND-AGENT-UNCHECKED.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from catalog.errors import WARNING, Finding, StepsError
from runners.rl_prep.build import CHUNK_BYTES, PlannedDataset
from runners.rl_prep.chunks import SKIP_FIX, ChunkResult, DatasetJob, process_chunk
from runners.rl_prep.options import Options
from runners.rl_prep.sources import Chunk, iter_chunks

FIRST_ROWS = 32
UNCHECKED = "W-BLEND-AGENT-UNCHECKED"
GYM_ROWS = "nemo_gym_jsonl"
NO_GYM_FIX = (
    "give the NeMo-RL checkout with its Gym submodule (--nemo-rl DIR), then the dry run checks "
    "the first rows of each dataset against the fields the agent's resource server reads"
)
UNDERIVED_FIX = (
    "check those rows against the server's README or data/example.jsonl, or run `steps "
    "validate` on the output with --step and the GRPO config that loads the agent"
)


def _finding(error: dict, prefix: str = "") -> Finding:
    fix = error["fix"]
    if prefix:  # on_bad_row=skip is set already: the fix is the rows'
        fix = fix.removesuffix(SKIP_FIX)
    return Finding(error["code"], prefix + error["message"], path=error["path"],
                   line=error["line"], fix=fix)  # fmt: skip


def _judge(job: DatasetJob, chunks: list[Chunk]) -> tuple[ChunkResult | None, int, int]:
    """(the first error, rows read, rows dropped) over the chunks."""
    read = dropped = 0
    for chunk in chunks:
        res = process_chunk(job, chunk)
        if res.error is not None:
            return res, read, dropped
        read += res.read
        dropped += sum(res.skipped.values())
    return None, read, dropped


def dataset_findings(
    plan: PlannedDataset, opts: Options, routes: dict | None = None
) -> list[Finding]:
    """The first thing the run would refuse in this dataset's first rows, if any."""
    job = plan.job(opts, False, routes=routes or None)
    first = min(FIRST_ROWS, plan.sample or FIRST_ROWS)
    try:
        chunks = list(iter_chunks(plan.files, CHUNK_BYTES, first))
        failed, read, dropped = _judge(job, chunks)
        if failed is not None:
            return [_finding(failed.error or {})]
        if read and dropped == read:  # on_bad_row=skip would write none of them
            failed, _, _ = _judge(replace(job, on_bad_row="error"), chunks)
            if failed is not None:
                prefix = f"all {read} first rows would be dropped; the first: "
                return [_finding(failed.error or {}, prefix)]
    except StepsError as exc:  # pyarrow missing, a damaged file, a placeholder source absent
        return [exc.finding]
    return []


def first_rows_findings(
    planned: list[PlannedDataset], opts: Options, gym_root: Path | None = None
) -> list[Finding]:
    """Each dataset's first rows as the run judges them, agents' fields included."""
    agents = blend_agents([p.spec for p in planned], opts.output_type)
    routes, unchecked = agent_routes(agents, gym_root)
    out: list[Finding] = [] if unchecked is None else [unchecked]
    for plan in planned:
        out += dataset_findings(plan, opts, routes)
    return out


def blend_agents(specs: list, output_type: str) -> dict[str, list[str]]:
    """Agent name -> the datasets that route their rows to it (Gym output only)."""
    agents: dict[str, list[str]] = {}
    if output_type != GYM_ROWS:
        return agents
    for spec in specs:
        ref = spec.agent_ref
        name = ref.get("name") if isinstance(ref, dict) else None
        if isinstance(name, str) and name:
            agents.setdefault(name, []).append(spec.name)
    return agents


def agent_routes(
    agents: dict[str, list[str]], gym_root: Path | None
) -> tuple[dict[str, dict], Finding | None]:
    """The contract's `routes` for the agents whose server's fields are known, and one warning
    about the others (None when all are checked)."""
    if not agents:
        return {}, None
    if gym_root is None or not gym_root.is_dir():
        from catalog.contracts.gym_facts import pinned_commit, pinned_routes

        routes = pinned_routes(agents)
        unknown = {a: agents[a] for a in agents if a not in routes}
        where = f" ({gym_root} is not a folder)" if gym_root is not None else ""
        why = (
            f"the pinned NeMo-Gym ({pinned_commit()}) defines no such agent with a derived "
            f"server, and there is no NeMo-Gym source tree to read it from{where}"
        )
        return routes, _unchecked(unknown, why, NO_GYM_FIX) if unknown else None
    from catalog.contracts.gym_routes import shipped_routes

    found = shipped_routes(gym_root, agents)
    routes: dict[str, dict] = {}
    why: list[str] = []
    for agent in sorted(agents):
        server = found.agents.get(agent)
        if agent not in found.agents:
            why.append(f"`{agent}` is defined by none of the Gym's config files")
        elif server is None:
            why.append(f"`{agent}` names no resources server the same file defines")
        elif server.reason is not None:
            why.append(f"`{agent}`: server `{server.server}`: {server.reason}")
        else:
            routes[agent] = server.to_option()
    unchecked = {a: agents[a] for a in agents if a not in routes}
    return routes, _unchecked(unchecked, "; ".join(why), UNDERIVED_FIX) if unchecked else None


def _unchecked(agents: dict[str, list[str]], why: str, fix: str) -> Finding:
    said = ", ".join(f"`{a}` (datasets {', '.join(agents[a])})" for a in sorted(agents))
    return Finding(
        UNCHECKED,
        f"rows routed to {said} are not checked for the fields their resource server reads: {why}",
        fix=fix,
        severity=WARNING,
        key="agent_ref",
    )
