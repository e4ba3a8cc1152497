"""NeMo-RL's CPU-side setup verdicts (`upstream_setup`) as findings: one failure, one finding, at
its config key, in upstream's words; shared by the local judge and the cluster-side judge job.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from catalog.errors import Finding
from runners.preflight import PreflightContext
from runners.preflight.folds import DATA, ENV, HUB, LOGGER, LOSS, READS, RESUME, ROWS_OF
from runners.preflight.topology import UNRESOLVED, finding, warning

_CODES = {"data": DATA, "loss": LOSS, "resume": RESUME, "logger": LOGGER, "env": ENV}
_WHAT = {
    "data": "NeMo-RL's data setup (its dataset class, processor, prompt files and first rows)",
    "loss": "NeMo-RL's loss function refuses these settings",
    "resume": "NeMo-RL cannot resume from checkpointing.checkpoint_dir",
    "logger": "NeMo-RL's logger cannot start with these settings (built offline)",
    "env": "NeMo-RL's environment",
}
_FIX = {
    "data": "fix the dataset entry as the message says (dataset_name one of NeMo-RL's classes or "
    "an importable dotted class, processor a registered one, prompt files that exist, rows with "
    "the columns the class reads)",
    "loss": "change the loss settings the message names so NeMo-RL's loss function accepts them",
    "resume": "point checkpointing.checkpoint_dir at a new folder, or at this algorithm's own run "
    "whose latest step_N holds training_info.json",
    "logger": "fix or disable the logger backend named (e.g. an MLflow tracking_uri that this "
    "MLflow accepts, such as sqlite:///mlflow.db or an http server)",
    "env": "set the environment option the message names to a value NeMo-RL knows",
}


def _key(ctx: PreflightContext, keys: list[str]) -> str:
    """The first key the compiled config holds (a key NeMo-RL quotes may be a default's)."""
    return next((key for key in keys if ctx.get(key) is not None), keys[0])


def _message(failure: dict[str, Any], version: str) -> str:
    stage = str(failure.get("stage"))
    head = _WHAT.get(stage, f"NeMo-RL's {stage} setup")
    if failure.get("rows_of"):  # what its dataloader does at the first batch, past the boundary
        head = f"NeMo-RL's dataset class and processor fail on {ROWS_OF}{failure['rows_of']}"
    if stage == "resume" and failure.get("step"):
        head += f" (its latest {failure['step']})"
    where = f" at {failure['frame']}" if failure.get("frame") else ""
    text = f"{head}: {failure.get('error')} (NeMo-RL {version}{where})"
    others = [k for k in failure.get("keys") or []][1:6]
    return text + (f"; {READS} {', '.join(others)}" if others else "")


def setup_findings(ctx: PreflightContext, answer: dict[str, Any]) -> Iterator[Finding]:
    """One finding per failed setup stage, at its key; a dataset NeMo-RL would fetch from the hub
    (not in the offline cache) is a warning: this check never downloads."""
    setup = answer.get("setup")
    if not isinstance(setup, dict):
        return
    version = str(answer.get("version") or "?")
    for failure in setup.get("failures") or []:
        keys = [str(k) for k in failure.get("keys") or [] if k] or ["config"]
        key = _key(ctx, keys)
        if ctx.get(key) == UNRESOLVED:
            continue  # unresolved_values says why
        stage = str(failure.get("stage"))
        if failure.get("level") == "warning":
            yield warning(
                ctx, HUB, key,
                f"NeMo-RL would read this dataset from the Hugging Face hub, and it is not in the "
                f"local cache, so its rows were not checked ({failure.get('error')})",
                "point data_path at a local file, or download the dataset into the cache "
                "(HF_HOME) on a machine with network before launching",
            )  # fmt: skip
            continue
        yield finding(
            ctx, _CODES.get(stage, DATA), key, _message(failure, version),
            _FIX.get(stage, "fix the setting the message names"),
        )  # fmt: skip
