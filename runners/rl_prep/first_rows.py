"""The dry run's look at the first rows of every dataset, judged as the run would judge them.

Each dataset's first rows go through the run's own `process_chunk` (placeholders resolved, the
blend's `map` applied, the transform, the output contract), so a map path the source lacks, a
placeholder source with no local copy, a missing pyarrow or a damaged Parquet file is a finding
before any row is written. Under on_bad_row=error the first bad row is the finding (the run
would stop there); under skip, only a dataset whose first rows would all be dropped is.
"""

from __future__ import annotations

from dataclasses import replace

from catalog.errors import Finding, StepsError
from runners.rl_prep.build import CHUNK_BYTES, PlannedDataset
from runners.rl_prep.chunks import ChunkResult, DatasetJob, process_chunk
from runners.rl_prep.options import Options
from runners.rl_prep.sources import Chunk, iter_chunks
from runners.rl_prep.split import Splitter

FIRST_ROWS = 32


def _finding(error: dict, prefix: str = "") -> Finding:
    return Finding(
        error["code"],
        prefix + error["message"],
        path=error["path"],
        line=error["line"],
        fix=error["fix"],
    )


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


def dataset_findings(plan: PlannedDataset, opts: Options) -> list[Finding]:
    """What the run would refuse in this dataset's first rows (at most one finding)."""
    spec = plan.spec
    splitter = Splitter(opts.seed, spec.name, opts.train_ratio, opts.val_ratio, spec.weight)
    job = DatasetJob(spec, plan.transform, opts.output_type, splitter, opts.on_bad_row, False)
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


def first_rows_findings(planned: list[PlannedDataset], opts: Options) -> list[Finding]:
    return [f for plan in planned for f in dataset_findings(plan, opts)]
