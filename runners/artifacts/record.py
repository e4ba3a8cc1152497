"""After a run: its outputs into the registry (with how they were made), then to W&B if on.

The inputs are recorded with their digests as the run saw them and, when an input is (or lies
inside) a registered version, that version's `NAME:vN`: the link `steps lineage` follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners.artifacts.names import artifact_name, is_model
from runners.artifacts.registry import (
    InputRecord,
    Output,
    Provenance,
    content_digest,
    load,
    register,
    registry_path,
    version_holding,
)
from runners.artifacts.wandb_log import Logged, WandbSettings, log_run
from runners.digest import DigestMemo, file_sha256


@dataclass
class FinishedRun:
    """What a finished run hands the registry (bound artifacts as `runners.bind` has them)."""

    step: str
    run_dir: Path
    root: Path  # the runs root the registry lies under
    inputs: list[Any]
    outputs: list[Any]
    nemo_rl_version: dict | None = None
    config: dict = field(default_factory=dict)
    wandb: WandbSettings | None = None
    graph: Any = None


def _inputs(run: FinishedRun, reg: Any, memo: DigestMemo) -> list[InputRecord]:
    """One record per input port and artifact (a prepared folder's shards count once)."""
    out: dict[tuple[str, str], InputRecord] = {}
    for a in run.inputs:
        held = version_holding(reg, a.value) if a.is_path else None
        if held is not None:
            name, v = held
            rec = InputRecord(port=a.name, type=v.type, path=v.path, digest=v.digest,
                              artifact=f"{name}:{v.label}")  # fmt: skip
        else:
            p = Path(a.value)
            digest = content_digest(p, memo)[0] if a.is_path and p.exists() else None
            rec = InputRecord(port=a.name, type=a.type, path=a.value, digest=digest)
        out.setdefault((rec.port, rec.path), rec)
    return list(out.values())


def record_run(run: FinishedRun) -> dict:
    """Register the outputs that exist; log to W&B when configured. Returns the report."""
    memo = DigestMemo()
    inputs = _inputs(run, load(run.root), memo)
    config_yaml = run.run_dir / "config.yaml"
    made_by = Provenance(
        step=run.step,
        run_dir=str(run.run_dir),
        config_digest=f"sha256:{file_sha256(config_yaml)}" if config_yaml.is_file() else None,
        nemo_rl_version=run.nemo_rl_version,
        inputs=inputs,
    )
    name = lambda a: artifact_name(run.step, a.type, is_model(a.type, run.graph))  # noqa: E731
    outputs = [Output(name(a), a.type, a.value, a.name) for a in run.outputs if a.is_path]
    done = register(run.root, outputs, made_by, memo)
    memo.save()
    report: dict[str, Any] = {
        "registry": str(registry_path(run.root)),
        "registered": [
            {
                "artifact": str(r),
                "type": r.version.type,
                "digest": r.version.digest,
                "path": r.version.path,
                "new": r.new,
            }
            for r in done
        ],
    }
    if run.wandb is not None:
        used = [Logged(i.port, i.artifact or f"{i.type}-{i.port}", i.type, i.digest, i.path)
                for i in inputs]  # fmt: skip
        produced = [Logged(r.version.port, str(r), r.version.type, r.version.digest,
                           r.version.path) for r in done]  # fmt: skip
        report["wandb"] = log_run(
            run.wandb,
            step=run.step,
            run_dir=run.run_dir,
            config={
                "step": run.step,
                "config_digest": made_by.config_digest,
                "nemo_rl_version": run.nemo_rl_version,
            },
            used=used,
            produced=produced,
            is_model=lambda t: is_model(t, run.graph),
        )
    return report
