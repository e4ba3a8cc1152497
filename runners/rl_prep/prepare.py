"""Prepare a blend into split, sharded JSONL plus a manifest: restartable, atomic, deterministic.

Work is written to a hidden folder beside `output_dir` and renamed into place when complete,
the manifest written last, so a killed run leaves the previous output (and its true manifest)
or nothing. A run key (blend hash, each input file's path/size/mtime, the options) decides
whether an existing output is up to date and can be reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.errors import StepsError
from runners.digest import file_sha256
from runners.rl_prep.blend import Blend, DatasetSpec, load_blend
from runners.rl_prep.chunks import ChunkResult, DatasetJob, process_chunk
from runners.rl_prep.rowcheck import row_check
from runners.rl_prep.shards import SplitWriter, parse_size
from runners.rl_prep.sources import Chunk, SourceFile, iter_chunks, resolve_files
from runners.rl_prep.split import SPLITS, TEST, TRAIN, VAL, Splitter
from runners.rl_prep.transforms import COMPATIBLE, DEFAULT_TRANSFORM

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
ON_BAD_ROW = ("error", "skip")
CHUNK_BYTES = 4 << 20
PARALLEL_FROM_BYTES = 64 << 20  # below this, worker start-up costs more than it saves


def tool_version() -> str:
    from steps import __version__

    return f"steps {__version__}"


@dataclass(frozen=True)
class Options:
    """The step config, checked, with relative paths resolved against the config's folder."""

    blend_path: Path
    output_dir: Path
    output_type: str
    train_ratio: float
    val_ratio: float
    shard_size: int
    seed: int
    sample: int | None
    on_bad_row: str
    force: bool
    workers: int | None = None

    def workers_for(self, input_bytes: int) -> int:
        """Worker processes: as configured, else one per CPU for inputs worth it, else none."""
        if self.workers is not None:
            return self.workers
        return (os.cpu_count() or 1) if input_bytes >= PARALLEL_FROM_BYTES else 1

    def key_fields(self) -> dict:
        """The options that change the output (and so belong in the run key)."""
        return {
            "output_type": self.output_type,
            "train_ratio": self.train_ratio,
            "val_ratio": self.val_ratio,
            "shard_size": self.shard_size,
            "seed": self.seed,
            "sample": self.sample,
            "on_bad_row": self.on_bad_row,
        }


def _bad_value(key: str, message: str, fix: str) -> StepsError:
    return StepsError("E-CONFIG-VALUE", f"{key}: {message}", key=key, fix=fix)


def _path(config: dict, key: str, config_dir: Path) -> Path:
    value = config.get(key)
    if not isinstance(value, str) or not value or value == "???":
        raise _bad_value(key, f"a path is required, got {value!r}", f"set {key}=PATH")
    path = Path(value).expanduser()
    return path if path.is_absolute() else (config_dir / path)


def _ratio(value: Any, key: str) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not 0.0 <= value <= 1.0:
        raise _bad_value(key, f"expected a number in [0, 1], got {value!r}", f"set {key}=0.01")
    return float(value)


def read_options(config: dict, blend: Blend, config_dir: Path, force: bool) -> Options:
    """Merge config and blend settings (the blend's own seed/ratios/shard_size win)."""
    merged = {**config, **blend.options}
    train, val = (
        _ratio(merged.get("train_ratio"), "train_ratio"),
        _ratio(merged.get("val_ratio"), "val_ratio"),
    )
    if train + val > 1.0 + 1e-9 or train <= 0.0:
        where = "the blend" if {"train_ratio", "val_ratio"} & blend.options.keys() else "config"
        raise StepsError(
            "E-BLEND",
            f"split ratios in {where} are invalid: train_ratio {train} + val_ratio {val} must be "
            "at most 1 with train_ratio > 0 (test gets the rest)",
            path=str(blend.path) if where == "the blend" else None,
            key="train_ratio",
            fix="e.g. train_ratio=0.98 val_ratio=0.01",
        )
    sample = config.get("sample")
    if sample is not None and (
        not isinstance(sample, int) or isinstance(sample, bool) or sample < 1
    ):
        raise _bad_value(
            "sample", f"expected null or a positive integer, got {sample!r}", "sample=100"
        )
    seed = merged.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise _bad_value("seed", f"expected an integer, got {seed!r}", "seed=1234")
    on_bad = config.get("on_bad_row", "error")
    if on_bad not in ON_BAD_ROW:
        raise _bad_value("on_bad_row", f"expected error or skip, got {on_bad!r}", "on_bad_row=skip")
    output_type = config.get("output_type", "nemo_gym_jsonl")
    if output_type not in COMPATIBLE:
        raise _bad_value(
            "output_type",
            f"rl_prep cannot produce `{output_type}`",
            f"use one of: {', '.join(COMPATIBLE)}",
        )
    workers = config.get("workers")
    if workers is not None and (
        not isinstance(workers, int) or isinstance(workers, bool) or workers < 1
    ):
        raise _bad_value(
            "workers", f"expected null or a positive integer, got {workers!r}", "workers=2"
        )
    return Options(
        blend_path=blend.path,
        output_dir=_path(config, "output_dir", config_dir),
        output_type=output_type,
        train_ratio=train,
        val_ratio=val,
        shard_size=parse_size(merged.get("shard_size", "256MB")),
        seed=seed,
        sample=sample,
        on_bad_row=on_bad,
        force=bool(force or config.get("force", False)),
        workers=workers,
    )


@dataclass(frozen=True)
class PlannedDataset:
    spec: DatasetSpec
    transform: str
    files: list[SourceFile]
    sample: int | None


def plan_datasets(blend: Blend, opts: Options) -> list[PlannedDataset]:
    """Resolve each dataset's transform and files (missing inputs fail here, before any write)."""
    planned = []
    for spec in blend.datasets:
        transform = spec.transform or DEFAULT_TRANSFORM[opts.output_type]
        if transform not in COMPATIBLE[opts.output_type]:
            raise StepsError(
                "E-BLEND",
                f"dataset `{spec.name}`: transform `{transform}` does not produce "
                f"{opts.output_type} rows",
                path=str(blend.path),
                line=spec.line,
                fix=f"use one of {', '.join(COMPATIBLE[opts.output_type])}, or change output_type",
            )
        limits = [n for n in (spec.sample, opts.sample) if n is not None]
        sample = min(limits) if limits else None
        planned.append(PlannedDataset(spec, transform, resolve_files(blend, spec), sample))
    return planned


def run_key(blend: Blend, opts: Options, planned: list[PlannedDataset]) -> str:
    material = {
        "tool": tool_version(),
        "blend": blend.sha256,
        "options": opts.key_fields(),
        "inputs": {p.spec.name: [f.identity() for f in p.files] for p in planned},
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _read_manifest(output_dir: Path) -> dict | None:
    try:
        data = json.loads((output_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _check_ours(output_dir: Path) -> None:
    """Refuse to replace a folder rl_prep did not write (it would be deleted)."""
    if not output_dir.exists():
        return
    if not output_dir.is_dir():
        raise StepsError(
            "E-OUTPUT-DIR",
            "output_dir exists and is a file",
            path=str(output_dir),
            fix="point output_dir at a new or rl_prep-owned folder",
        )
    manifest = _read_manifest(output_dir)
    ours = manifest is not None and str(manifest.get("tool", "")).startswith("steps ")
    if not ours and any(output_dir.iterdir()):
        raise StepsError(
            "E-OUTPUT-DIR",
            "output_dir exists, is not empty and has no rl_prep manifest; refusing to replace it",
            path=str(output_dir),
            fix="choose an empty or new output_dir, or remove this folder yourself",
        )


def _up_to_date(output_dir: Path, key: str) -> dict | None:
    """The existing manifest if it has this run key and every shard it lists is intact."""
    manifest = _read_manifest(output_dir)
    if manifest is None or manifest.get("run_key") != key:
        return None
    try:
        for split in manifest["splits"].values():
            for shard in split["shards"]:
                if (output_dir / shard["path"]).stat().st_size != shard["bytes"]:
                    return None
    except (OSError, KeyError, TypeError, AttributeError):
        return None
    return manifest


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_stale(output_dir: Path) -> None:
    """Remove hidden work folders left by killed runs (never one whose process still runs)."""
    for prefix in (f".{output_dir.name}.partial-", f".{output_dir.name}.old-"):
        for stale in output_dir.parent.glob(f"{prefix}*"):
            pid = stale.name[len(prefix) :]
            if pid.isdigit() and (int(pid) == os.getpid() or not _pid_alive(int(pid))):
                shutil.rmtree(stale, ignore_errors=True)


class _Progress:
    """A byte-based progress bar on stderr (silent when stderr is not a terminal)."""

    def __init__(self, total: int) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
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
    """Runs `process_chunk` in worker processes (or in-process), results in input order, and
    hashes finished shards there too, while the main process writes the next ones.

    At most `depth` chunks are in flight, so memory stays bounded whatever the input size.
    """

    def __init__(self, workers: int) -> None:
        self.pool = None
        self.depth = 2 * workers + 2
        if workers > 1:
            import multiprocessing

            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            self.pool = ctx.Pool(workers)

    def ordered(
        self, job: DatasetJob, chunks: Iterator[Chunk]
    ) -> Iterator[tuple[Chunk, ChunkResult]]:
        if self.pool is None:
            for chunk in chunks:
                yield chunk, process_chunk(job, chunk)
            return
        pending: deque = deque()
        for chunk in chunks:
            pending.append((chunk, self.pool.apply_async(process_chunk, (job, chunk))))
            if len(pending) >= self.depth:
                chunk, res = pending.popleft()
                yield chunk, res.get()
        while pending:
            chunk, res = pending.popleft()
            yield chunk, res.get()

    def sha256_later(self, path: str) -> Callable[[], str]:
        """Start hashing a finished shard; the returned call waits for its sha256."""
        if self.pool is None:
            digest = file_sha256(path)
            return lambda: digest
        return self.pool.apply_async(file_sha256, (path,)).get

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()


class _Inputs:
    """Reads a chunk's bytes into one reused buffer (the writers queue views of it, so each
    chunk is flushed before the next is read)."""

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
    """Stream one dataset through the workers into the split writers; its manifest counts.

    Each dataset is split on its own. If the hash gives it no val row, its train row with the
    highest u (the one nearest the val boundary) moves to val, so validation holds every
    dataset; to allow that, each chunk holds back its best candidate and the best one overall
    is written last.
    """
    spec = plan.spec
    splitter = Splitter(opts.seed, spec.name, opts.train_ratio, opts.val_ratio, spec.weight)
    job = DatasetJob(
        spec, plan.transform, opts.output_type, splitter, opts.on_bad_row, opts.val_ratio > 0
    )
    chunks = iter_chunks(plan.files, CHUNK_BYTES, plan.sample)
    identities = [f.identity() for f in plan.files]
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
        progress.add(chunk.length or sum(len(d) for p in res.parts.values() for d, _ in p))
        if res.candidate is not None:
            if held is None or res.candidate[0] > held[0]:
                held, res.candidate = res.candidate, held
            if res.candidate is not None:
                written[TRAIN] += _write_train(writers[TRAIN], res.candidate)
        for writer in writers.values():
            writer.flush()  # before `source` is overwritten by the next chunk
    if [f.identity() for f in plan.files] != identities:
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
        TRAIN: written[TRAIN],
        VAL: written[VAL],
        TEST: written[TEST],
        "read": read,
        "skipped": dict(sorted(skipped.items())),
        "weight": spec.weight,
        "transform": plan.transform,
        "files": [str(f.path) for f in plan.files],
    }


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _build(
    staging: Path, blend: Blend, opts: Options, planned: list[PlannedDataset], key: str
) -> dict:
    row_check(opts.output_type)  # fail here, before any worker starts, if it cannot be built
    total = sum(f.path.stat().st_size for p in planned for f in p.files)
    workers = _Workers(opts.workers_for(total))
    writers = {
        name: SplitWriter(staging, name, opts.shard_size, workers.sha256_later) for name in SPLITS
    }
    inputs = _Inputs()
    progress = _Progress(total)
    datasets: dict[str, dict] = {}
    try:
        for plan in planned:
            datasets[plan.spec.name] = _prepare_dataset(
                plan, opts, writers, workers, inputs, progress
            )
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
    _write_json(staging / MANIFEST, manifest)
    return manifest


def _publish(staging: Path, output_dir: Path) -> None:
    """Swap the finished folder into place; the old output is removed only after."""
    if output_dir.exists():
        old = output_dir.parent / f".{output_dir.name}.old-{os.getpid()}"
        os.replace(output_dir, old)
        os.replace(staging, output_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, output_dir)


def _summary(output_dir: Path, manifest: dict, reused: bool) -> dict:
    splits = manifest["splits"]
    return {
        "output_dir": str(output_dir),
        "manifest": str(output_dir / MANIFEST),
        "reused": reused,
        "run_key": manifest["run_key"],
        "output_type": manifest["output_type"],
        "rows": {name: splits[name]["rows"] for name in SPLITS},
        "shards": {name: len(splits[name]["shards"]) for name in SPLITS},
        "skipped": sum(sum(d["skipped"].values()) for d in manifest["datasets"].values()),
        "datasets": {
            name: {k: d[k] for k in (TRAIN, VAL, TEST, "skipped")}
            for name, d in manifest["datasets"].items()
        },
    }


def run_step(config: dict, *, config_dir: Path, force: bool = False) -> dict:
    """Prepare the blend named by `config`; reuse an up-to-date output unless forced."""
    blend = load_blend(_path(config, "blend_path", Path(config_dir)).resolve())
    opts = read_options(config, blend, Path(config_dir), force)
    output_dir = opts.output_dir.resolve()
    planned = plan_datasets(blend, opts)
    key = run_key(blend, opts, planned)
    _check_ours(output_dir)
    if not opts.force:
        manifest = _up_to_date(output_dir, key)
        if manifest is not None:
            print(
                f"rl_prep: {output_dir} is up to date (run key {key[:12]}); reusing it. "
                "Pass force=true to prepare again.",
                file=sys.stderr,
            )
            return _summary(output_dir, manifest, reused=True)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale(output_dir)
    staging = output_dir.parent / f".{output_dir.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        manifest = _build(staging, blend, opts, planned, key)
        _publish(staging, output_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    summary = _summary(output_dir, manifest, reused=False)
    rows = summary["rows"]
    print(
        f"rl_prep: wrote {rows[TRAIN]} train, {rows[VAL]} val, {rows[TEST]} test rows "
        f"({sum(summary['shards'].values())} shards) to {output_dir}",
        file=sys.stderr,
    )
    return summary
