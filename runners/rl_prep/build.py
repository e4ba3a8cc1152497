"""Build one rl_prep output: every dataset streamed through the workers into the split writers, in
input order (the same output for any number of workers), a few chunks in flight at most."""

from __future__ import annotations

import sys
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.contracts import jsonl
from catalog.errors import WARNING, Finding, StepsError
from catalog.file_digest import SHA256, XXH3, file_digests
from runners.rl_prep.blend import Blend
from runners.rl_prep.chunks import ChunkResult, DatasetJob, process_chunk, row_check
from runners.rl_prep.options import Options, usable_cpus
from runners.rl_prep.output import MANIFEST, MANIFEST_VERSION, tool_version, write_json
from runners.rl_prep.shards import SplitWriter
from runners.rl_prep.sources import Chunk, SourceFile, iter_chunks
from runners.rl_prep.spec import DatasetSpec
from runners.rl_prep.split import SPLITS, TRAIN, VAL, Splitter

CHUNK_BYTES = 4 << 20
SHARD_DIGESTS = (SHA256, XXH3)


@dataclass(frozen=True)
class PlannedDataset:
    spec: DatasetSpec
    transform: str
    files: list[SourceFile]
    sample: int | None
    refs: list[SourceFile] = field(default_factory=list)  # placeholder sources' files

    def job(self, opts: Options, hold_val: bool, **more: Any) -> DatasetJob:
        """What a worker needs to process any chunk of this dataset (`hold_val`: see chunks)."""
        s = self.spec
        split = Splitter(opts.seed, s.name, opts.train_ratio, opts.val_ratio, s.weight)
        return DatasetJob(
            s, self.transform, opts.output_type, split, opts.on_bad_row, hold_val, **more
        )


class _Progress:
    """A byte-based progress bar on stderr (silent when stderr is not a terminal)."""

    def __init__(self, total: int) -> None:
        from tqdm import tqdm

        class Bar(tqdm):
            monitor_interval = 0  # no monitor thread: the next run's workers may be forked

        self.bar = Bar(
            total=total, unit="B", unit_scale=True, desc="rl_prep", disable=None, file=sys.stderr
        )
        self.pending = 0

    def add(self, n: int) -> None:
        self.pending += n
        if self.pending >= 1 << 22:
            self.bar.update(self.pending)
            self.pending = 0

    def close(self) -> None:
        self.bar.update(self.pending)
        self.bar.close()


class _Workers:
    """Runs `process_chunk` in worker processes (or in-process), results in input order, and hashes
    finished shards there too.

    `Pool.terminate()` after a bad row once hung for minutes (it kills workers that may hold the
    task queue's lock), so nothing is killed here: `close` cancels queued chunks and lets running
    ones end. Workers are forked only while this process has no other thread (a lock held at the
    fork stays held in the child); else they come from a forkserver that preloads the worker code.
    """

    def __init__(self, workers: int) -> None:
        self.pool: Any = None
        self.depth = 2 * workers + 2
        if workers > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            methods = multiprocessing.get_all_start_methods()
            alone = threading.active_count() == 1  # the executor forks before its own thread
            method = "fork" if alone and "fork" in methods else "forkserver"
            ctx = multiprocessing.get_context(method if method in methods else "spawn")
            if method == "forkserver":  # the server loads what a worker runs once
                preload = ["concurrent.futures.process", "runners.rl_prep.worker_preload"]
                ctx.set_forkserver_preload(preload)
            self.pool = ProcessPoolExecutor(workers, mp_context=ctx)

    def ordered(
        self, job: DatasetJob, chunks: Iterator[Chunk]
    ) -> Iterator[tuple[Chunk, ChunkResult]]:
        if self.pool is None:
            for chunk in chunks:
                yield chunk, process_chunk(job, chunk)
            return
        pending: deque = deque()
        for chunk in chunks:
            pending.append((chunk, self.pool.submit(process_chunk, job, chunk)))
            if len(pending) >= self.depth:
                chunk, res = pending.popleft()
                yield chunk, res.result()
        while pending:
            chunk, res = pending.popleft()
            yield chunk, res.result()

    def digests_later(self, path: str) -> Callable[[], dict[str, str]]:
        """Start hashing a finished shard (sha256, xxh3_128); the call waits for them."""
        if self.pool is None:
            digests = file_digests(path, SHARD_DIGESTS)
            return lambda: digests
        return self.pool.submit(file_digests, path, SHARD_DIGESTS).result

    def close(self) -> None:
        """Drop queued chunks, let the few running ones finish (each is one bounded chunk)."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


class _Inputs:
    """Reads a chunk's bytes into one reused buffer (writers queue views of it, so each chunk is
    flushed before the next is read)."""

    def __init__(self) -> None:
        self.files: dict[str, Any] = {}
        self.buf = bytearray()

    def read(self, chunk: Chunk) -> memoryview:
        fh = self.files.get(chunk.path)
        if fh is None:
            fh = self.files[chunk.path] = open(chunk.path, "rb", buffering=0)  # noqa: SIM115
        if len(self.buf) < chunk.length:
            self.buf = bytearray(chunk.length)
        view = memoryview(self.buf)[: chunk.length]
        fh.seek(chunk.offset)
        got = 0
        while got < chunk.length and (n := fh.readinto(view[got:])):
            got += n
        if got != chunk.length:
            raise StepsError(
                "E-BLEND",
                f"input file {chunk.path} became shorter while rl_prep read it",
                path=chunk.path,
                fix="run rl_prep again once the input files are complete",
            )
        return view

    def close(self) -> None:
        for fh in self.files.values():
            fh.close()
        self.files.clear()


def _write_train(writer: SplitWriter, candidate: tuple[int, bytes, int]) -> int:
    """Write a val candidate that stays in train, as many times as its weight says."""
    _, data, copies = candidate
    for _ in range(copies):
        writer.write(data)
    return copies


def _prepare_dataset(
    plan: PlannedDataset,
    opts: Options,
    writers: dict[str, SplitWriter],
    workers: _Workers,
    inputs: _Inputs,
    progress: _Progress,
) -> dict:
    """Stream one dataset through the workers into the split writers; its counts.

    When the hash gives a dataset no val row, its train row nearest the val boundary (highest u)
    moves to val, so validation holds every dataset: each chunk holds back its best candidate."""
    spec = plan.spec
    # max_line read now: the output must pass `validate`'s line cap
    job = plan.job(opts, opts.val_ratio > 0, max_line=jsonl.MAX_LINE_BYTES)
    chunks = iter_chunks(plan.files, CHUNK_BYTES, plan.sample)
    identities = [f.stat_identity() for f in plan.files]
    lines: Counter = Counter()  # lines of each file's chunks so far
    written: Counter = Counter()
    skipped: Counter = Counter()
    read = train_sources = 0
    held: tuple[int, bytes, int] | None = None
    for chunk, res in workers.ordered(job, chunks):
        if res.error is not None:
            e = res.error
            line = e["line"] + lines[chunk.path] if e["line"] is not None else None
            raise StepsError(e["code"], e["message"], path=e["path"], line=line, fix=e["fix"])
        lines[chunk.path] += res.lines
        spans = any(type(data) is tuple for parts in res.parts.values() for data, _ in parts)
        source = inputs.read(chunk) if spans else memoryview(b"")
        at = chunk.offset
        for split in SPLITS:
            write = writers[split].write
            for data, rows in res.parts[split]:
                if type(data) is tuple:
                    write(source[data[0] - at : data[1] - at], rows)
                else:
                    write(data, rows)
        written.update(res.written)
        skipped.update(res.skipped)
        read += res.read
        train_sources += res.train_sources
        # columnar chunks have no byte length: count the bytes they produce
        decoded = sum(len(d) for p in res.parts.values() for d, _ in p)
        share = chunk.share if chunk.share is not None else decoded  # file bytes: percent, ETA
        progress.add(chunk.length or share)
        if res.candidate is not None:
            if held is None or res.candidate[0] > held[0]:
                held, res.candidate = res.candidate, held
            if res.candidate is not None:
                written[TRAIN] += _write_train(writers[TRAIN], res.candidate)
        for writer in writers.values():
            writer.flush()  # before `source` is overwritten by the next chunk
    if [f.stat_identity() for f in plan.files] != identities:
        raise StepsError(
            "E-BLEND",
            f"dataset `{spec.name}`: an input file changed while rl_prep read it",
            fix="run rl_prep again once the input files are complete",
        )
    if held is not None:
        if written[VAL] == 0 and train_sources > 1:
            writers[VAL].write(held[1])
            written[VAL] += 1
        else:
            written[TRAIN] += _write_train(writers[TRAIN], held)
    return {
        **{split: written[split] for split in SPLITS},
        "read": read,
        "skipped": dict(sorted(skipped.items())),
        "weight": spec.weight,
        "transform": plan.transform,
        "files": [str(f.path) for f in plan.files],
    }


def _no_rows(blend: Blend, plan: PlannedDataset) -> StepsError:
    """An empty dataset is a mistake (a wrong glob, an empty export), never 0 rows written."""
    files = plan.files
    where = str(files[0].path) if len(files) == 1 else f"{len(files)} files"
    return StepsError(
        "E-BLEND",
        f"dataset `{plan.spec.name}` has no rows ({where})",
        path=str(blend.path),
        line=plan.spec.line,
        fix="point the dataset's path at files that hold rows, or remove the dataset",
    )


def _capped(asked: int, count: int) -> None:
    warning = Finding(
        "W-WORKERS-CAPPED",
        f"workers={asked} but this process may use {usable_cpus()} CPU(s): running {count} "
        "worker(s) (more would only compete for the CPUs and each holds its own memory)",
        key="workers",
        fix=f"set workers={count} or less, or null for one per CPU",
        severity=WARNING,
    )
    print(warning.render(), file=sys.stderr)


def build(
    staging: Path, blend: Blend, opts: Options, planned: list[PlannedDataset], key: str
) -> dict:
    """Write every dataset's splits and then the manifest into `staging`; the manifest."""
    row_check(opts.output_type)  # fail here, before any worker starts, if it cannot be built
    total = sum(f.path.stat().st_size for p in planned for f in p.files)
    count = opts.workers_for(total)
    if opts.workers is not None and count < opts.workers:
        _capped(opts.workers, count)
    workers = _Workers(count)
    writers = {
        name: SplitWriter(staging, name, opts.shard_size, workers.digests_later) for name in SPLITS
    }
    inputs = _Inputs()
    progress = _Progress(total)
    datasets: dict[str, dict] = {}
    try:
        for plan in planned:
            counts = _prepare_dataset(plan, opts, writers, workers, inputs, progress)
            if counts["read"] == 0:
                raise _no_rows(blend, plan)
            datasets[plan.spec.name] = counts
        splits = {name: w.close() for name, w in writers.items()}
    finally:
        workers.close()
        inputs.close()
        for w in writers.values():
            w.abort()
        progress.close()
    manifest = {
        "version": MANIFEST_VERSION,
        "tool": tool_version(),
        "run_key": key,
        "blend_sha256": blend.sha256,
        "blend_path": str(blend.path),
        "output_type": opts.output_type,
        "options": opts.key_fields(),
        "splits": splits,
        "datasets": datasets,
    }
    write_json(staging / MANIFEST, manifest)
    return manifest
