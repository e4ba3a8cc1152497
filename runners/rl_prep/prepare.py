"""Prepare a blend into split, sharded JSONL plus a manifest: restartable, atomic, deterministic.
An output is reused when its run key (blend, inputs' digests, options) matches and its shards
still hold the manifest's digests; else it is built aside and swapped into place."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

from catalog.errors import StepsError
from catalog.file_digest import XXH3
from catalog.folder_faults import existing_folder, make_folders, writing
from runners.digest import DigestMemo
from runners.rl_prep.blend import Blend, load_blend
from runners.rl_prep.build import PlannedDataset, build
from runners.rl_prep.options import Options, config_path, read_options
from runners.rl_prep.output import (
    MANIFEST,
    check_ours,
    clean_stale,
    publish,
    shards,
    tool_version,
    up_to_date,
    work_dir,
)
from runners.rl_prep.sources import resolve_files
from runners.rl_prep.spec import DatasetSpec
from runners.rl_prep.split import SPLITS, TEST, TRAIN, VAL
from runners.rl_prep.transforms import COMPATIBLE, DEFAULT_TRANSFORM


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
        files = resolve_files(blend, spec)
        spec, refs = _with_placeholder_files(blend, spec)
        planned.append(PlannedDataset(spec, transform, files, sample, refs))
    return planned


def _with_placeholder_files(blend: Blend, spec: DatasetSpec) -> tuple[DatasetSpec, list]:
    """The spec with each placeholder source's local files found (offline; E-HF-OFFLINE or E-BLEND
    when missing), and those files for the run key."""
    if not spec.placeholders:
        return spec, []
    sources, refs = [], []
    for src in spec.placeholders:
        where = DatasetSpec(
            f"{spec.name}.hf_placeholders.{src.name}", src.paths, spec.line, split=src.split,
            subset=src.subset,
        )  # fmt: skip
        found = resolve_files(blend, where)
        refs.extend(found)
        sources.append(replace(src, files=tuple(str(f.path) for f in found)))
    return replace(spec, placeholders=tuple(sources)), refs


def load_and_plan(
    config: dict, config_dir: Path, force: bool = False
) -> tuple[Blend, Options, list[PlannedDataset]]:
    """Everything `prepare` checks before it writes: config, blend, inputs (preflight too)."""
    blend = load_blend(config_path(config, "blend_path", config_dir).resolve())
    opts = read_options(config, blend, config_dir, force)
    return blend, opts, plan_datasets(blend, opts)


def run_key(blend: Blend, opts: Options, planned: list[PlannedDataset], memo: DigestMemo) -> str:
    material = {
        "tool": tool_version(),
        "blend": blend.sha256,
        "options": opts.key_fields(),
        "inputs": {p.spec.name: [f.identity(memo) for f in p.files] for p in planned},
    }
    refs = {p.spec.name: [f.identity(memo) for f in p.refs] for p in planned if p.refs}
    if refs:  # absent otherwise, so outputs without placeholders keep their keys
        material["placeholder_sources"] = refs
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _summary(output_dir: Path, manifest: dict, reused: bool) -> dict:
    splits = manifest["splits"]
    by_code = sum((Counter(d["skipped"]) for d in manifest["datasets"].values()), Counter())
    return {
        "output_dir": str(output_dir),
        "manifest": str(output_dir / MANIFEST),
        "reused": reused,
        "run_key": manifest["run_key"],
        "output_type": manifest["output_type"],
        "rows": {name: splits[name]["rows"] for name in SPLITS},
        "shards": {name: len(splits[name]["shards"]) for name in SPLITS},
        "skipped": sum(by_code.values()),
        "skipped_by_code": dict(sorted(by_code.items())),
        "datasets": {
            name: {k: d[k] for k in (TRAIN, VAL, TEST, "skipped")}
            for name, d in manifest["datasets"].items()
        },
    }


def prepare(config: dict, *, config_dir: Path, force: bool = False) -> dict:
    """Prepare the blend named by `config`; reuse an up-to-date output unless forced."""
    blend, opts, planned = load_and_plan(config, Path(config_dir), force)
    output_dir = opts.output_dir.resolve()
    memo = DigestMemo()
    try:
        key = run_key(blend, opts, planned, memo)
        check_ours(output_dir)
        if not opts.force:
            manifest = up_to_date(output_dir, key, memo)
            if manifest is not None:
                return _summary(output_dir, manifest, reused=True)
        return _build_into(output_dir, blend, opts, planned, key, memo)
    finally:
        memo.save()


def _build_into(
    output_dir: Path,
    blend: Blend,
    opts: Options,
    planned: list[PlannedDataset],
    key: str,
    memo: DigestMemo,
) -> dict:
    """Build in a hidden work folder and swap it into place; a folder that cannot take the write is
    E-OUTPUT-DIR with nothing of this run left."""
    where = existing_folder(output_dir.parent)
    with writing(where, "E-OUTPUT-DIR", f"rl_prep's output {output_dir}", "set output_dir") as made:
        made += make_folders(output_dir.parent)
        elsewhere = clean_stale(output_dir)
        staging = work_dir(output_dir, "partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            manifest = build(staging, blend, opts, planned, key)
            publish(staging, output_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    for shard in shards(manifest):  # the next reuse check then costs a stat per shard
        memo.remember(output_dir / shard["path"], shard[XXH3])
    summary = _summary(output_dir, manifest, reused=False)
    if elsewhere:
        summary["work_left_for_other_hosts"] = elsewhere
    return summary


def describe(summary: dict) -> str:
    """What the user reads on stderr after a run: rows written, rows skipped, reuse."""
    out = summary["output_dir"]
    if summary["reused"]:
        return (
            f"rl_prep: {out} is up to date (run key {summary['run_key'][:12]}); reusing it. "
            "Pass force=true to prepare again."
        )
    rows = summary["rows"]
    lines = [
        f"rl_prep: wrote {rows[TRAIN]} train, {rows[VAL]} val, {rows[TEST]} test rows "
        f"({sum(summary['shards'].values())} shards) to {out}"
    ]
    if summary["skipped"]:
        codes = ", ".join(f"{c}: {n}" for c, n in summary["skipped_by_code"].items())
        lines.append(
            f"rl_prep: skipped {summary['skipped']} bad row(s) ({codes}); per dataset in "
            f"{summary['manifest']}"
        )
    for folder in summary.get("work_left_for_other_hosts", []):
        lines.append(
            f"rl_prep: left {folder} alone (another host's work folder); remove it once that "
            "run is gone"
        )
    return "\n".join(lines)


def run_step(config: dict, *, config_dir: Path, force: bool = False) -> dict:
    """The runner entry: `prepare`, then a short report on stderr; returns the summary."""
    summary = prepare(config, config_dir=config_dir, force=force)
    print(describe(summary), file=sys.stderr)
    return summary
