"""After a run: its outputs into the registry with how they were made (inputs with digests and the
`NAME:vN` they lie in, what `steps lineage` follows), then to W&B if on."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners.artifacts.names import artifact_name, is_model
from runners.artifacts.registry import (
    InputRecord,
    Output,
    Provenance,
    Version,
    Watch,
    load,
    register,
    registry_path,
    version_holding,
)
from runners.artifacts.wandb_log import Logged, WandbSettings, log_run, wandb_installed
from runners.digest import DigestMemo, content_digest, file_sha256


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


def _made_by(run: FinishedRun, memo: DigestMemo) -> Provenance:
    config_yaml = run.run_dir / "config.yaml"
    return Provenance(
        step=run.step,
        run_dir=str(run.run_dir),
        config_digest=f"sha256:{file_sha256(config_yaml)}" if config_yaml.is_file() else None,
        nemo_rl_version=run.nemo_rl_version,
        inputs=_inputs(run, load(run.root), memo),
    )


def _outputs(run: FinishedRun) -> list[Output]:
    name = lambda a: artifact_name(run.step, a.type, is_model(a.type, run.graph))  # noqa: E731
    return [Output(name(a), a.type, a.value, a.name) for a in run.outputs if a.is_path]


def record_launch(run: FinishedRun, watch: Watch | None) -> dict:
    """At launch of a run that ends elsewhere: its outputs as pending versions."""
    memo = DigestMemo()
    to = vars(run.wandb) if run.wandb is not None else None
    done = register(run.root, _outputs(run), _made_by(run, memo), memo, pending=True,
                    watch=watch, wandb=to)  # fmt: skip
    memo.save()
    report: dict[str, Any] = {"registry": str(registry_path(run.root)),
                              "pending": [str(r) for r in done]}  # fmt: skip
    if to is not None and done:
        report["wandb_when_ready"] = to
    return report


def record_run(run: FinishedRun) -> dict:
    """Register the outputs that exist; log to W&B when configured. Returns the report."""
    memo = DigestMemo()
    made_by = _made_by(run, memo)
    done = register(run.root, _outputs(run), made_by, memo)
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
    if run.wandb is not None and not wandb_installed():  # said before the run: W-WANDB-MISSING
        report["wandb"] = {"skipped": "the wandb package is not installed: nothing logged"}
    elif run.wandb is not None:
        produced = [(r.name, r.version) for r in done]
        report["wandb"] = log_versions(run.wandb, made_by, run.run_dir, produced, run.graph)
    return report


def log_versions(
    settings: WandbSettings,
    made_by: Provenance,
    run_dir: Path,
    produced: list[tuple[str, Version]],
    graph: Any = None,
) -> dict:
    """One W&B run for a steps run: its inputs used, its registered versions logged."""
    used = [Logged(i.port, i.artifact or f"{i.type}-{i.port}", i.type, i.digest, i.path)
            for i in made_by.inputs]  # fmt: skip
    logged = [Logged(v.port, f"{name}:{v.label}", v.type, v.digest, v.path)
              for name, v in produced]  # fmt: skip
    return log_run(
        settings,
        step=made_by.step,
        run_dir=run_dir,
        config={
            "step": made_by.step,
            "config_digest": made_by.config_digest,
            "nemo_rl_version": made_by.nemo_rl_version,
        },
        used=used,
        produced=logged,
        is_model=lambda t: is_model(t, graph),
    )


def report_lines(report: dict) -> list[str]:
    """One line per artifact registered, used and logged (what `steps run` prints)."""
    lines = [
        f"registered {r['artifact']} ({r['type']}, {r['digest']}"
        f"{'' if r['new'] else ', same content as before'}): {r['path']}"
        for r in report.get("registered", [])
    ]
    lines += [
        f"registered {n} pending: ready once the run ends (`python -m steps lineage {n}`)"
        for n in report.get("pending", [])
    ]
    if report.get("wandb_when_ready"):
        to = report["wandb_when_ready"]
        lines.append(f"wandb {to['entity'] + '/' if to.get('entity') else ''}{to['project']}: "
                     "logs them and their inputs when they are ready")  # fmt: skip
    wb = report.get("wandb")
    if wb and wb.get("skipped"):
        lines.append(f"wandb: {wb['skipped']}")
    elif wb:
        off = wb["mode"] == "offline"
        where = f"wandb {wb['entity'] + '/' if wb.get('entity') else ''}{wb['project']}"
        where += " (offline)" if off else ""
        for u in wb["used"]:
            lines.append(
                f"{where}: input {u['artifact']} (port {u['port']}) recorded in the run's config"
                " (W&B takes use_artifact online only)"
                if off
                else f"{where}: use_artifact {u['artifact']} (port {u['port']})"
            )
        for o in wb["logged"]:
            how = "by reference" if o["by_reference"] else "copied"
            lines.append(f"{where}: log_artifact {o['artifact']} ({how})")
        if wb.get("sync"):
            lines.append(f"{where}: nothing uploaded; `{wb['sync']}` would sync it")
    return lines
