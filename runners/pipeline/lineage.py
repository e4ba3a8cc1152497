"""Pipeline lineage: artifact fingerprints, cache keys, atomic JSON records, W&B stage runs."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from catalog.atomic_write import write_atomic
from runners.artifacts.names import artifact_name, is_model
from runners.digest import DigestMemo, content_digest


def fingerprint(value: str, hub: bool = False, memo: DigestMemo | None = None) -> dict:
    """An input's content now: the registry's content digest (an unchanged file costs one stat), a
    hub id by name only."""
    if hub:
        return {"hub": value}
    path = Path(value)
    if not path.exists():
        return {"missing": value}
    own = memo is None
    memo = DigestMemo() if memo is None else memo
    try:
        digest, files, size = content_digest(path, memo)
    except OSError as exc:  # the stage reading it will say so; a changed error is a change
        return {"unreadable": value, "why": exc.strerror or type(exc).__name__}
    finally:
        if own:
            memo.save()
    return {"digest": digest, "files": files, "bytes": size}


def write_json(path: Path, data: Any) -> None:
    """Write whole or not at all (a reader never sees half a record)."""
    write_atomic(path, json.dumps(data, indent=2, default=str) + "\n")


def cache_key(
    step: str,
    version: str,
    config_hash: str,
    inputs: dict,
    outputs: dict,
    nemo_rl: str | None = None,
    config_env: dict | None = None,
) -> str:
    """The stage's identity: step and version, compiled config, input contents, output places,
    NeMo-RL version (when known) and the env values its config's `${oc.env:...}` read."""
    material = {
        "step": step,
        "version": version,
        "config": config_hash,
        "inputs": inputs,
        "outputs": outputs,
    }
    if nemo_rl is not None:
        material["nemo_rl"] = nemo_rl
    if config_env:
        material["config_env"] = config_env
    blob = json.dumps(material, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


class WandbLineage:
    """One W&B run per executed stage, grouped under the pipeline."""

    def __init__(self, pipeline: str, project: str | None, entity: str | None, graph: Any) -> None:
        from runners.artifacts.wandb_log import WandbSettings, import_wandb

        import_wandb()  # E-WANDB-MISSING before the first stage runs
        project = project or os.environ.get("WANDB_PROJECT") or pipeline
        self.settings = WandbSettings(project, entity, f"pipeline {pipeline}")
        self.pipeline, self.graph = pipeline, graph

    def is_model(self, type_name: str) -> bool:
        """A checkpoint type (logged as a W&B model, by reference), else a dataset."""
        return is_model(type_name, self.graph)

    def log_stage(self, stage: Any, record: dict, input_names: dict[str, str]) -> None:
        """Log one completed stage; `input_names` maps an input port to its artifact name."""
        from runners.artifacts.wandb_log import Logged, log_run

        def digest(side: str, port: str) -> str | None:
            return record.get(side, {}).get(port, {}).get("fingerprint", {}).get("digest")

        used = [Logged(port, input_names[port], b.type, digest("inputs", port), b.value)
                for port, b in stage.inputs.items()]  # fmt: skip
        produced = [
            Logged(port, artifact_name(stage.step, b.type, self.is_model(b.type), stage.id),
                   b.type, digest("outputs", port), b.value)
            for port, b in stage.outputs.items()
        ]  # fmt: skip
        config = {
            "stage": stage.id,
            "step": stage.step,
            "version": stage.version,
            "config_hash": record.get("config_hash"),
            "cache_key": record.get("cache_key"),
        }
        log_run(self.settings, step=stage.step, run_dir=None, config=config, used=used,
                produced=produced, is_model=self.is_model, name=f"{self.pipeline}/{stage.id}",
                group=self.pipeline)  # fmt: skip
