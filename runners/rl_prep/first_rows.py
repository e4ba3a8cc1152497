"""The dry run's look at the first rows of every dataset, judged by the run's own `process_chunk`
(under on_bad_row=skip, only a dataset whose first rows would all be dropped is a finding), Gym
rows also against their agent's fields (agent_fields.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from catalog.errors import Finding, StepsError
from runners.rl_prep.agent_fields import agent_routes, blend_agents
from runners.rl_prep.build import CHUNK_BYTES, PlannedDataset
from runners.rl_prep.chunks import SKIP_FIX, ChunkResult, DatasetJob, process_chunk
from runners.rl_prep.options import Options
from runners.rl_prep.sources import Chunk, iter_chunks

FIRST_ROWS = 32


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
