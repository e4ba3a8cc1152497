"""The chain's `rules` (plain JSON, which a Slurm segment applies on its node) asked from this
side with the pydantic record: go on or stop, the latest checkpoint, a failed segment's kind."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

from runners.chain import rules
from runners.chain.record import ChainRecord, ChainState, Failure


@dataclass(frozen=True)
class Verdict:
    state: ChainState
    reason: str


@dataclass(frozen=True)
class Checkpoint:
    """The highest `step_N` saved whole and its training_info.json, as `rules` reads it."""

    path: Path
    info: dict

    @property
    def total_steps(self) -> int:
        return int(self.info["total_steps"])


def latest_checkpoint(checkpoint_dir: str | Path) -> Checkpoint | None:
    """None while nothing is saved whole (a `tmp_step_N` left by a kill during a save is not)."""
    found = rules.latest_checkpoint(checkpoint_dir)
    return Checkpoint(*found) if found else None


def judge(
    chain: ChainRecord, ckpt: Checkpoint | None, cancelled: bool, exit_code: int = 0
) -> Verdict | None:
    """`rules.judge` on the record."""
    info = ckpt.info if ckpt is not None else None
    found = rules.judge(chain.model_dump(mode="json"), info, cancelled, exit_code)
    return Verdict(cast(ChainState, found[0]), found[1]) if found else None


def classify(
    state: str, exit_code: int | None, logs: list[str], scheduler: str = "Slurm"
) -> Failure:
    """The kind of failure that ended a segment (exit code not 0, or killed from outside)."""
    return Failure.model_validate(rules.classify(state, exit_code, logs, scheduler))
