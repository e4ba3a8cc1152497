"""Resuming from `checkpointing.checkpoint_dir`: the step NeMo-RL picks (the highest `step_N`,
complete or not) and whether its training state loads into the algorithm that runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from catalog.errors import Finding
from catalog.nemo_rl_version import in_range
from catalog.record_file import read_json
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import UNRESOLVED, algorithm, cite, enabled, finding, warning

STEP_NAME = re.compile(r"^step_(\d+)$")
INFO = "training_info.json"
INFO_MAX_BYTES = 1 << 20  # NeMo-RL writes a few counters and metrics: a bigger file is not its
KEY = "checkpointing.checkpoint_dir"
OPEN_INFO = {  # CheckpointManager.load_training_info's open()
    "0.4.0": "nemo_rl/utils/checkpoint.py:287",
    "0.6.0": "nemo_rl/utils/checkpoint.py:348",
    "0.7.0": "nemo_rl/utils/checkpoint.py:389",
    "pin": "nemo_rl/utils/checkpoint.py:586",
}
# The keys each algorithm's training reads from the loaded state without a default.
STATE_KEYS: dict[str, tuple[str, ...]] = {
    "dpo": ("epoch", "step", "total_steps", "consumed_samples"),
    "grpo": ("current_step", "current_epoch", "total_steps", "consumed_samples"),
}
ASYNC_GRPO_KEYS = ("current_step", "consumed_samples")  # async_grpo_train reads only these
# Where a missing key fails, per version (the pin: nowhere, defaults fill it).
STATE_FAILS = {
    "dpo": {
        "0.4.0": "KeyError at nemo_rl/algorithms/dpo.py:516 when training starts",
        "0.6.0": "KeyError at nemo_rl/algorithms/dpo.py:530 when training starts",
        "0.7.0": "TypeError building DPOSaveState at nemo_rl/algorithms/dpo.py:185 (setup)",
    },
    "grpo": {
        "0.4.0": "KeyError at nemo_rl/algorithms/grpo.py:870 when training starts",
        "0.5.0": "KeyError at nemo_rl/algorithms/grpo.py:1023 when training starts",
        "0.6.0": "KeyError at nemo_rl/algorithms/grpo.py:1350 when training starts",
        "0.7.0": "KeyError at nemo_rl/algorithms/grpo.py:2168 when training starts",
    },
}
FILLED_AT_PIN = {
    "dpo": "nemo_rl/algorithms/dpo.py:63-74",
    "grpo": "nemo_rl/algorithms/grpo.py:338-350",
}
FRESH = "for a fresh run pass checkpointing.checkpoint_dir=<new folder>"


def latest_step(folder: Path) -> Path | None:
    """The entry the checkpoint manager resumes from: the highest `step_N` by number."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    steps = [(int(m.group(1)), name) for name in names if (m := STEP_NAME.match(name))]
    return folder / max(steps)[1] if steps else None


@rule("resume_checkpoint")
def resume_checkpoint(ctx: PreflightContext) -> Iterator[Finding]:
    """W-RESUME-CHECKPOINT, E-RESUME-INFO, E-RESUME-STATE / W-RESUME-STATE: what NeMo-RL will
    resume from checkpoint_dir, and whether that step's training state loads."""
    err = partial(finding, ctx, "E-RESUME-INFO")
    value = ctx.get(KEY)
    if not isinstance(value, str) or not value or value == UNRESOLVED:
        return
    path = Path(value)
    if not path.is_absolute():
        if ctx.nemo_rl_dir is None:
            return  # where NeMo-RL runs, and so which folder it reads, is not known here
        path = ctx.nemo_rl_dir / path
    step = latest_step(path)
    if step is None:
        return
    opened = cite(ctx.nemo_rl_version, OPEN_INFO)
    info = step / INFO
    if not info.is_file():
        why = "is not a folder" if not step.is_dir() else f"has no {INFO}"
        yield err(
            KEY,
            f"NeMo-RL resumes from the highest step_N, {step}, which {why} (an incomplete or "
            f"copied checkpoint is not skipped): it fails opening {info} at {opened} during "
            "setup",
            f"remove or complete {step} (NeMo-RL then resumes from the step below it), or {FRESH}",
        )
        return
    try:
        state = read_json(info, INFO_MAX_BYTES)
    except (OSError, ValueError) as exc:
        yield err(
            KEY,
            f"NeMo-RL resumes from {step}, whose {INFO} cannot be loaded ({exc}); it fails "
            f"at {opened} during setup",
            f"restore {info}, remove {step}, or {FRESH}",
        )
        return
    if not isinstance(state, dict):
        yield err(
            KEY,
            f"NeMo-RL resumes from {step}, whose {INFO} is not a JSON object (the training "
            "state NeMo-RL saved there)",
            f"restore {info}, remove {step}, or {FRESH}",
        )
        return
    found = _state_mismatch(ctx, step, state)
    if found is not None:
        yield found
        return
    yield warning(
        ctx,
        "W-RESUME-CHECKPOINT",
        KEY,
        f"{path} holds checkpoints; NeMo-RL resumes from {step.name} (weights, optimizer, "
        "dataloader and step counter)",
        f"keep it to resume; {FRESH}",
    )


def _state_mismatch(ctx: PreflightContext, step: Path, state: dict) -> Finding | None:
    """A finding when the saved state lacks keys the running algorithm reads."""
    algo = algorithm(ctx)
    if algo not in STATE_KEYS:
        return None
    wanted = STATE_KEYS[algo]
    if algo == "grpo" and enabled(ctx.get("grpo.async_grpo")):
        wanted = ASYNC_GRPO_KEYS
    missing = [k for k in wanted if k not in state]
    if not missing:
        return None
    other = "grpo" if algo == "dpo" else "dpo"
    theirs = all(k in state for k in STATE_KEYS[other])
    whose = f"a {other.upper()} run's checkpoint" if theirs else "not this algorithm's"
    head = (
        f"NeMo-RL resumes from {step}, {whose}: its {INFO} lacks "
        f"{', '.join(missing)}, which {algo.upper()} reads from the saved state"
    )
    fix = f"{FRESH}; the {other.upper() if theirs else 'other'} run's checkpoints stay"
    fix += " where they are (start from its exported weights with policy.model_name)"
    if in_range(ctx.nemo_rl_version, "pin"):  # the pin (or an unknown one) fills missing keys
        if not theirs:
            return None  # a partial state from an older NeMo-RL: the pin loads it on purpose
        return warning(
            ctx,
            "W-RESUME-STATE",
            KEY,
            f"{head}; this NeMo-RL starts them at 0 ({FILLED_AT_PIN[algo]}) and trains on from "
            "the other run's weights, optimizer and dataloader state",
            fix,
        )
    fails = cite(ctx.nemo_rl_version, STATE_FAILS[algo])
    return finding(ctx, "E-RESUME-STATE", KEY, f"{head}: {fails}", fix)
