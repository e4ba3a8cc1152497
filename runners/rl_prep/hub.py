"""`hf://org/name` resolved offline: the hub cache (`huggingface-cli download`) or the `datasets`
Arrow cache (`load_dataset`); never the network (else E-HF-OFFLINE, saying how to fetch it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from catalog.errors import StepsError

if TYPE_CHECKING:
    from runners.rl_prep.blend import Blend
    from runners.rl_prep.spec import DatasetSpec

HF_PREFIX = "hf://"
DATA_SUFFIXES = (".jsonl", ".json", ".ndjson", ".parquet", ".arrow")


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
        raise StepsError(
            "E-BLEND",
            f"dataset `{spec.name}`: `{uri}` is not hf://org/name",
            path=str(blend.path),
            line=spec.line,
            fix="write the hub id as hf://org/name and put split/subset in their own keys",
        )
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
