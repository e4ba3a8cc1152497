"""Training state from NeMo-RL's checkpoints: the latest complete `step_N` and its training_info.

NeMo-RL saves into `tmp_step_N` and renames it to `step_N` when the save is whole; a leftover
`tmp_step_N` (a kill during a save) is ignored on resume, and so here. The global step is
training_info.json's `total_steps`; `step` counts within the epoch (0 at an epoch's end) and
`epoch` is the epoch it belongs to, so a save at an epoch's end has finished `epoch + 1` epochs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

STEP_DIR = re.compile(r"^step_(\d+)$")
INFO = "training_info.json"


class TrainingInfo(BaseModel):
    """training_info.json (validation metrics ride along as extra keys)."""

    model_config = ConfigDict(extra="allow")

    epoch: int = 0
    step: int = 0
    total_steps: int
    consumed_samples: int | None = None


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    info: TrainingInfo

    @property
    def total_steps(self) -> int:
        return self.info.total_steps

    @property
    def epochs_done(self) -> int:
        at_epoch_end = self.info.step == 0 and self.info.total_steps > 0
        return self.info.epoch + 1 if at_epoch_end else self.info.epoch


def latest_checkpoint(checkpoint_dir: Path) -> Checkpoint | None:
    """The highest `step_N` with a readable training_info.json (None: nothing saved yet)."""
    try:
        found = [(STEP_DIR.match(p.name), p) for p in checkpoint_dir.iterdir()]
    except OSError:
        return None
    names = sorted(((int(m.group(1)), p) for m, p in found if m), key=lambda i: -i[0])
    for _, path in names:
        try:
            info = TrainingInfo.model_validate(json.loads((path / INFO).read_text("utf-8")))
        except (OSError, ValueError, ValidationError):
            continue
        return Checkpoint(path, info)
    return None


def reached_end(ckpt: Checkpoint | None, max_steps: int | None, max_epochs: int | None) -> bool:
    """NeMo-RL's own end: `max_num_steps` global steps, or `max_num_epochs` whole epochs."""
    if ckpt is None:
        return False
    if max_steps is not None and ckpt.total_steps >= max_steps:
        return True
    return max_epochs is not None and ckpt.epochs_done >= max_epochs
