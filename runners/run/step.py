"""Which step runs, with which config file, manifest and --input pairs (paths or artifact
references: `NAME[:ALIAS|:vN]`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from catalog.errors import StepsError

if TYPE_CHECKING:
    from catalog.discovery import StepEntry
    from catalog.manifest import StepManifest
    from runners.run.plan import RunRequest


def _entry_for_dir(step_dir: Path) -> StepEntry:
    from catalog.discovery import MANIFEST, StepEntry
    from catalog.tomlfile import load_toml

    manifest = step_dir / MANIFEST
    if not manifest.is_file():
        raise StepsError("E-STEP-UNKNOWN", f"no {MANIFEST} in {step_dir}", exit_code=2)
    data = load_toml(manifest, code="E-MANIFEST-TOML")
    meta = data.get("step")
    meta = meta if isinstance(meta, dict) else {}
    return StepEntry(str(meta.get("id") or step_dir.name), step_dir, step_dir.parent, data)


def entry_for(req: RunRequest, step_dir: Path | None = None) -> StepEntry:
    """The step to run: a step folder (step.py) or an id resolved in the catalog."""
    if step_dir is not None:
        return _entry_for_dir(Path(step_dir).resolve())
    from catalog.discovery import discover, resolve

    return resolve(req.step or "", discover(req.catalog))


def config_file_for(entry: StepEntry, name: str | None, default: str, cwd: Path) -> Path:
    name = name or default
    looks_like_path = "/" in name or name.endswith((".yaml", ".yml")) or os.sep in name
    if not looks_like_path:
        return entry.shipped_config(name, also=", or a YAML path")
    return (cwd / Path(name).expanduser()).resolve()


def parse_inputs(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise StepsError(
                "E-INPUT-SYNTAX",
                f"--input '{pair}': expected NAME=PATH or NAME=ARTIFACT[:ALIAS]",
                fix="e.g. --input train=data/train.jsonl or train=DataBlendsArtifact-rl:latest",
                exit_code=2,
            )
        out[name.strip()] = path
    return out


def manifest_of(entry: StepEntry) -> StepManifest:
    from catalog.manifest import parse_manifest

    if entry.load_error is not None:
        f = entry.load_error
        raise StepsError(f.code, f.message, path=f.path, line=f.line, fix=f.fix, exit_code=2)
    manifest, problems = parse_manifest(entry.data, entry.manifest_path)
    if manifest is None:
        f = problems[0]
        more = (
            f" (and {len(problems) - 1} more; run `python -m steps check`)" if problems[1:] else ""
        )
        raise StepsError(f.code, f.message + more, path=f.path, line=f.line, fix=f.fix, exit_code=2)
    return manifest
