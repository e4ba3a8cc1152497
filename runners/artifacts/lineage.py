"""How an artifact was made, and what a run produced: read from the registry and run.json (a
pending version whose run has ended is settled first: runners.artifacts.pending)."""

from __future__ import annotations

from pathlib import Path

from catalog.errors import StepsError
from runners.artifacts.names import parse_ref
from runners.artifacts.pending import settled
from runners.artifacts.registry import load, lookup
from runners.rundir import read_record


def of_artifact(root: Path, text: str) -> dict:
    """`NAME[:ALIAS|:vN]` -> its version, aliases, digest, producing run and that run's inputs."""
    ref = parse_ref(text)
    if ref is None:
        raise StepsError(
            "E-ARTIFACT-REF",
            f"'{text}' is not an artifact reference",
            fix="write NAME, NAME:ALIAS or NAME:vN (e.g. DataBlendsArtifact-rl:latest); "
            "for a run dir pass its path",
            exit_code=2,
        )
    reg = settled(root, load(root))
    v = lookup(reg, ref, root)
    entry = reg.artifacts[ref.name]
    made = v.made_by
    record = _run_record(Path(made.run_dir)) if made.run_dir else None
    return {
        "artifact": f"{ref.name}:{v.label}",
        "aliases": sorted(a for a, n in entry.aliases.items() if n == v.version),
        "type": v.type,
        "state": v.state,
        "reason": v.reason,
        "digest": v.digest,
        "path": v.path,
        "files": v.files,
        "bytes": v.bytes,
        "created_utc": v.created_utc,
        "produced_by": {
            "step": made.step,
            "port": v.port,
            "run_dir": made.run_dir,
            "config_digest": made.config_digest,
            "nemo_rl_version": made.nemo_rl_version,
            "argv": (record or {}).get("argv"),
        },
        "inputs": [i.model_dump() for i in made.inputs],
        "versions": [f"v{x.version}" for x in entry.versions],
        "wandb": v.wandb,
    }


def of_run(root: Path, run_dir: Path) -> dict:
    """A run dir -> its step, inputs and every version it produced."""
    record = _run_record(run_dir)
    if record is None:
        raise StepsError(
            "E-RUN-RECORD",
            f"no readable run.json in {run_dir}",
            path=str(run_dir / "run.json"),
            fix="name a run dir written by `python -m steps run`, or an artifact NAME[:ALIAS]",
            exit_code=2,
        )
    reg = settled(root, load(root))
    here = str(run_dir.resolve())
    produced = [
        {
            "artifact": f"{name}:{v.label}",
            "type": v.type,
            "state": v.state,
            "digest": v.digest,
            "path": v.path,
            "port": v.port,
        }
        for name, entry in sorted(reg.artifacts.items())
        for v in entry.versions
        if v.made_by.run_dir and Path(v.made_by.run_dir).resolve() == Path(here)
    ]
    return {
        "run_dir": here,
        "step": record.get("step"),
        "nemo_rl_version": record.get("nemo_rl_version"),
        "inputs": record.get("inputs", []),
        "produced": produced,
    }


PIPELINE_RECORD = "pipeline.json"  # runners.pipeline's summary at a pipeline root


def of_pipeline(root: Path, pipeline_root: Path) -> dict:
    """A pipeline root -> each stage's latest run as `of_run` tells it, in the order run."""
    runs = []
    for stage in sorted(p for p in pipeline_root.iterdir() if (p / "_runs").is_dir()):
        found = sorted((stage / "_runs").glob("**/run.json"), key=lambda f: f.parent.name)
        if found:
            runs.append((found[-1].parent.name, stage.name, found[-1].parent))
    return {
        "pipeline_root": str(pipeline_root.resolve()),
        "stages": [{"stage": name, **of_run(root, run_dir)} for _, name, run_dir in sorted(runs)],
    }


def not_a_record(folder: Path) -> StepsError:
    """A folder given to `lineage` that is neither a run dir nor a pipeline root."""
    return StepsError(
        "E-RUN-RECORD",
        f"{folder} holds neither run.json (a run dir) nor {PIPELINE_RECORD} (a pipeline root)",
        path=str(folder),
        fix="name a run dir written by `python -m steps run`, a pipeline root written by "
        "`python -m steps pipeline run`, or an artifact NAME[:ALIAS]",
        exit_code=2,
    )


def _run_record(run_dir: Path) -> dict | None:
    """The run's run.json (rundir's one reader), or None when it cannot be read."""
    try:
        data = read_record(run_dir)
    except StepsError:
        return None
    return data if isinstance(data, dict) else None
