"""Where a dataset's rows come from: JSONL/Parquet/Arrow streamed, CSV and JSON arrays read as
NeMo-RL's loader reads them. Files are sorted so listing order never changes the output.
`hf://org/name` is resolved offline, from the hub cache (`huggingface-cli download`) or the
`datasets` Arrow cache (`load_dataset`); else E-HF-OFFLINE, saying how to fetch it."""

from __future__ import annotations

import glob as globlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.contracts.builder_rows import BuilderRows, iter_builder_rows
from catalog.contracts.columnar import arrow_batches, parquet_batches
from catalog.contracts.loader_formats import save_to_disk_files, streamed_as_jsonl
from catalog.errors import StepsError
from runners.digest import DigestMemo
from runners.rl_prep.blend import Blend
from runners.rl_prep.spec import DatasetSpec

JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
COLUMNAR_SUFFIXES = (".parquet", ".arrow")
DATA_SUFFIXES = (*JSONL_SUFFIXES, *COLUMNAR_SUFFIXES)  # a hub snapshot's data files
SUFFIXES = (*DATA_SUFFIXES, ".csv")
HF_PREFIX = "hf://"
NAMES = "/".join(SUFFIXES)
BATCH_ROWS = 1024


@dataclass(frozen=True)
class SourceFile:
    """One input file and its identities (what the run key hashes to notice changes)."""

    path: Path

    @property
    def kind(self) -> str:
        """How its rows are read: "jsonl" (byte ranges), "parquet", "arrow", or "csv" / "json" (an
        array, read as NeMo-RL's loader reads it)."""
        suffix = self.path.suffix.lower()
        if suffix in COLUMNAR_SUFFIXES or suffix == ".csv":
            return suffix.lstrip(".")
        if suffix == ".json" and not streamed_as_jsonl(self.path):
            return "json"
        return "jsonl"

    def identity(self, memo: DigestMemo) -> list:
        """Path, size and content digest: an edit that keeps size and mtime (`cp -p`) is noticed; a
        `touch` is not a change."""
        return [str(self.path), self.path.stat().st_size, memo.digest(self.path)]

    def stat_identity(self) -> list:
        """Free to take; changes on any write to the file (ctime cannot be set back)."""
        st = self.path.stat()
        return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _hf_home() -> Path:
    return Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface").expanduser()


def hub_cache() -> Path:
    """Where `huggingface_hub` keeps downloaded repositories."""
    env = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    return Path(env).expanduser() if env else _hf_home() / "hub"


def datasets_cache() -> Path:
    """Where `datasets.load_dataset` keeps prepared Arrow files."""
    env = os.environ.get("HF_DATASETS_CACHE")
    return Path(env).expanduser() if env else _hf_home() / "datasets"


def _matches_split(path: Path, root: Path, split: str) -> bool:
    stem = path.name.split(".")[0]
    if stem == split or stem.startswith((f"{split}-", f"{split}_")):
        return True
    return split in path.relative_to(root).parts[:-1]


def _snapshot_files(repo: str, split: str, subset: str | None) -> list[Path]:
    base = hub_cache() / f"datasets--{repo.replace('/', '--')}"
    snapshots = base / "snapshots"
    if not snapshots.is_dir():
        return []
    ref = base / "refs" / "main"
    revision = ref.read_text().strip() if ref.is_file() else ""
    if revision and (snapshots / revision).is_dir():
        snap = snapshots / revision
    else:
        candidates = sorted((p for p in snapshots.iterdir() if p.is_dir()), key=os.path.getmtime)
        if not candidates:
            return []
        snap = candidates[-1]
    root = snap / subset if subset and (snap / subset).is_dir() else snap
    files = sorted(
        p for p in root.rglob("*") if p.is_file() and p.name.lower().endswith(DATA_SUFFIXES)
    )
    chosen = [p for p in files if _matches_split(p, root, split)]
    if not chosen and split == "train" and len(files) == 1:
        chosen = files  # a one-file dataset is its own train split, as in `datasets`
    return chosen


def _arrow_cache_files(repo: str, split: str, subset: str | None) -> list[Path]:
    base = datasets_cache() / repo.replace("/", "___")
    config_dir = base / (subset or "default")
    if not config_dir.is_dir():
        return []
    builds = sorted(
        (p for p in config_dir.glob("*/*") if p.is_dir()), key=lambda p: p.stat().st_mtime
    )
    for build in reversed(builds):
        files = sorted(build.glob(f"*-{split}.arrow")) + sorted(
            build.glob(f"*-{split}-*-of-*.arrow")
        )
        if files:
            return files
    return []


def resolve_hf(uri: str, spec: DatasetSpec, blend: Blend) -> list[Path]:
    """Local files holding `split`/`subset` of an hf:// dataset, or E-HF-OFFLINE."""
    repo = uri[len(HF_PREFIX) :].strip("/")
    if repo.count("/") != 1:
        fix = "write the hub id as hf://org/name and put split/subset in their own keys"
        raise _missing(blend, spec, f"`{uri}` is not hf://org/name", fix)
    files = _snapshot_files(repo, spec.split, spec.subset) or _arrow_cache_files(
        repo, spec.split, spec.subset
    )
    if files:
        return files
    subset = f" {spec.subset}" if spec.subset else ""
    subset_arg = f", {spec.subset!r}" if spec.subset else ""
    raise StepsError(
        "E-HF-OFFLINE",
        f"dataset `{spec.name}`: {uri} (split {spec.split!r}{subset}) is not in the local "
        f"Hugging Face caches ({hub_cache()}, {datasets_cache()}); rl_prep never downloads",
        path=str(blend.path),
        line=spec.line,
        fix=(
            f"on a node with network, run `huggingface-cli download --repo-type dataset {repo}` "
            f"with the same HF_HOME, or `datasets.load_dataset({repo!r}{subset_arg}, "
            f"split={spec.split!r}).save_to_disk(DIR)` and set this dataset's path to DIR"
        ),
    )


def _missing(blend: Blend, spec: DatasetSpec, what: str, fix: str = "") -> StepsError:
    """E-BLEND at the dataset's line in the blend: its files, or its hub id, are not there."""
    fix = fix or "fix `path` (relative paths are read from the blend's folder) or create the file"
    return StepsError(
        "E-BLEND", f"dataset `{spec.name}`: {what}", path=str(blend.path), line=spec.line, fix=fix
    )


def _data_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)


def resolve_files(blend: Blend, spec: DatasetSpec) -> list[SourceFile]:
    """Every input file of a dataset, sorted and de-duplicated; a missing one is E-BLEND."""
    found: list[Path] = []
    for raw in spec.paths:
        if raw.startswith(HF_PREFIX):
            found.extend(resolve_hf(raw, spec, blend))
            continue
        target = Path(raw).expanduser()
        if not target.is_absolute():
            target = blend.path.parent / target
        if any(ch in raw for ch in "*?["):
            matches = sorted(Path(p) for p in globlib.glob(str(target), recursive=True))
            files = [p for p in matches if p.is_file() and p.suffix.lower() in SUFFIXES]
            if not files:
                raise _missing(blend, spec, f"glob `{raw}` matches no {NAMES} file")
            found.extend(files)
        elif target.is_dir():
            files = save_to_disk_files(target, spec.split)
            if files is None:
                files = _data_files(target)
            if not files:
                raise _missing(blend, spec, f"directory `{raw}` holds no {NAMES} file")
            found.extend(files)
        elif target.is_file():
            found.append(target)
        else:
            raise _missing(blend, spec, f"file not found: {target}")
    unique = sorted({p.resolve() for p in found})
    for p in unique:
        _check_readable(blend, spec, p)
    return [SourceFile(p) for p in unique]


def _check_readable(blend: Blend, spec: DatasetSpec, path: Path) -> None:
    """Fail before any work (exit 2) when an input file cannot be opened."""
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError as exc:
        raise StepsError(
            "E-BLEND",
            f"dataset `{spec.name}`: cannot read this input file ({exc.strerror})",
            path=str(path),
            fix=f"make it readable by this user, or change the dataset's path "
            f"({blend.path}:{spec.line})",
            exit_code=2,
        ) from None


def _jsonl_ranges(path: Path, chunk_bytes: int) -> Iterator[tuple[int, int]]:
    """(offset, length) of runs of whole lines, about `chunk_bytes` each."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        start = 0
        while start < size:
            end = start + chunk_bytes
            if end < size:
                fh.seek(end - 1)
                while True:  # to the end of the line holding byte end-1
                    piece = fh.readline(1 << 20)
                    if not piece or piece.endswith(b"\n"):
                        break
                end = fh.tell()
            end = min(end, size)
            yield start, end - start
            start = end


def _first_rows(data: bytes, n: int) -> tuple[int, int]:
    """(length of the prefix of `data` holding its first `n` non-blank lines, how many it holds)."""
    kept, end = 0, 0
    for piece in data.splitlines(keepends=True):
        if kept == n:
            break
        end += len(piece)
        kept += bool(piece.strip())
    return end, kept


@dataclass(frozen=True)
class Chunk:
    """Consecutive rows of one file: `length` bytes of whole JSONL lines at `offset`, or decoded
    Parquet/Arrow rows. Line numbers count from 1 within the chunk."""

    path: str
    offset: int = 0
    length: int = 0
    rows: list | None = None
    share: int | None = None  # decoded rows: the file bytes they stand for (None: not known)


def read_chunk(chunk: Chunk) -> bytes:
    """The bytes of a JSONL chunk."""
    with open(chunk.path, "rb") as fh:
        fh.seek(chunk.offset)
        return fh.read(chunk.length)


def iter_chunks(files: list[SourceFile], chunk_bytes: int, sample: int | None) -> Iterator[Chunk]:
    """The chunks of every file in order, `sample` rows at most."""
    left = sample
    for src in files:
        where = str(src.path)
        if src.kind == "jsonl":
            with open(src.path, "rb") as fh:
                for offset, length in _jsonl_ranges(src.path, chunk_bytes):
                    if left is not None:
                        fh.seek(offset)
                        length, kept = _first_rows(fh.read(length), left)
                        left -= kept
                    yield Chunk(where, offset, length)
                    if left == 0:
                        return
            continue
        if src.kind == "parquet":
            batches = parquet_batches(src.path, BATCH_ROWS)
        elif src.kind == "arrow":
            batches = arrow_batches(src.path)
        else:
            batches = _builder_batches(src.path, src.kind, left)
        size, total, done = src.path.stat().st_size, _row_count(src), 0
        for rows in batches:
            if left is not None:
                rows = rows[:left]
                left -= len(rows)
            before = done
            done += len(rows)
            share = size * done // total - size * before // total if total else None
            yield Chunk(where, rows=rows, share=share)
            if left == 0:
                return


def _row_count(src: SourceFile) -> int | None:
    """Rows of a Parquet or Arrow file from its metadata (None: not known up front)."""
    try:
        if src.kind == "parquet":
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(src.path).metadata.num_rows) or None
        if src.kind == "arrow":
            import pyarrow as pa

            with pa.memory_map(str(src.path)) as source:
                return int(pa.ipc.open_file(source).count_rows()) or None
    except Exception:  # a damaged file is the batches' finding, with its row group
        return None
    return None


def _builder_batches(path: Path, builder: str, limit: int | None) -> Iterator[list]:
    """A CSV or JSON array file's rows (all, or the first `limit`), typed as NeMo-RL's loader types
    them; its E-CSV/E-JSON finding is raised where the read reaches it."""
    out = BuilderRows(builder, max_bytes=None)
    batch: list = []
    for n, (_, _, row) in enumerate(iter_builder_rows(path, out), 1):
        batch.append(row)
        if len(batch) == BATCH_ROWS or n == limit:
            yield batch
            batch = []
            if n == limit:
                return
    errors = [f for f in out.findings if f.is_error]
    if errors:
        f = errors[0]
        raise StepsError(f.code, f.message, path=f.path, line=f.line, fix=f.fix)
    if batch:
        yield batch


def canonical_bytes(value: Any) -> bytes:
    """Stable bytes for a decoded row (key order and spacing normalized), for split hashing."""
    return json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str
    ).encode("utf-8")
