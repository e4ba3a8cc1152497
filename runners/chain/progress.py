"""Training state from NeMo-RL's checkpoints: the latest complete `step_N` and its training_info.

NeMo-RL saves into `tmp_step_N` and renames it to `step_N` when the save is whole; a leftover
`tmp_step_N` (a kill during a save) is ignored on resume, and so here. The global step is
training_info.json's `total_steps`; `step` counts within the epoch (0 at an epoch's end) and
`epoch` is the epoch it belongs to, so a save at an epoch's end has finished `epoch + 1` epochs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from runners.chain import rules


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
        return rules.epochs_done(self.info.model_dump())


def latest_checkpoint(checkpoint_dir: Path) -> Checkpoint | None:
    """The highest `step_N` with a readable training_info.json (None: nothing saved yet), as
    the chain's rules read it (`rules.latest_checkpoint`, which a Slurm segment runs itself)."""
    found = rules.latest_checkpoint(checkpoint_dir)
    if found is None:
        return None
    try:
        return Checkpoint(found[0], TrainingInfo.model_validate(found[1]))
    except ValidationError:
        return None


def reached_end(ckpt: Checkpoint | None, max_steps: int | None, max_epochs: int | None) -> bool:
    """NeMo-RL's own end: `max_num_steps` global steps, or `max_num_epochs` whole epochs."""
    return rules.reached_end(ckpt.info.model_dump() if ckpt else None, max_steps, max_epochs)
