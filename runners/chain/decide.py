"""Whether a chain goes on: judged from training state and the segments so far, never a clock.

The same question is asked at both ends of a segment: before NeMo-RL starts (may this segment
train?) and after it exits (may the queued successor run?). The rules are `rules` (plain JSON,
the standard library only), which a Slurm segment applies on its node itself; here they are
asked with the pydantic record (the Ray driver, and whoever reads a chain on this side).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from runners.chain import rules
from runners.chain.progress import Checkpoint
from runners.chain.record import ChainRecord, ChainState


@dataclass(frozen=True)
class Verdict:
    state: ChainState
    reason: str


def judge(
    chain: ChainRecord, ckpt: Checkpoint | None, cancelled: bool, exit_code: int = 0
) -> Verdict | None:
    """Before a segment (exit_code 0) or after one: done only when NeMo-RL reached its own end
    and the segment exited 0 (a deadline stop exits 0 too). Both executors ask this."""
    info = ckpt.info.model_dump() if ckpt is not None else None
    return _verdict(rules.judge(chain.model_dump(mode="json"), info, cancelled, exit_code))


def verdict(chain: ChainRecord, done: bool, cancelled: bool) -> Verdict | None:
    """Why no further segment may run, or None when one may (the segment list is up to date)."""
    return _verdict(rules.verdict(chain.model_dump(mode="json"), done, cancelled))


def _verdict(found: tuple[str, str] | None) -> Verdict | None:
    return Verdict(cast(ChainState, found[0]), found[1]) if found else None
