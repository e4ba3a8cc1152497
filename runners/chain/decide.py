"""Whether a chain goes on: judged from training state and the segments so far, never a clock.

The same question is asked at both ends of a segment: before NeMo-RL starts (may this segment
train?) and after it exits (may the queued successor run?). The answer is no when training
reached NeMo-RL's own end, the chain was cancelled, the last failure is of a kind a retry cannot
help, the same failure came twice at the same step, two segments in a row trained nothing, the
segment limit is used up, or the GPU-hour budget is spent.
"""

from __future__ import annotations

from dataclasses import dataclass

from runners.chain.progress import Checkpoint, reached_end
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
    done = exit_code == 0 and reached_end(ckpt, chain.max_steps, chain.max_epochs)
    return verdict(chain, done, cancelled)


def verdict(chain: ChainRecord, done: bool, cancelled: bool) -> Verdict | None:
    """Why no further segment may run, or None when one may (the segment list is up to date)."""
    if cancelled:
        return Verdict("cancelled", "cancelled by `python -m steps cancel`")
    if done:
        return Verdict("done", "training reached its end")
    ended = [s for s in chain.segments if s.ended]
    last = ended[-1] if ended else None
    if last is not None and last.failure is not None and not last.failure.retryable:
        return Verdict(
            "stopped", f"segment {last.n} failed with {last.failure.kind}, which a retry cannot fix"
        )
    if len(ended) >= 2:
        before, after = ended[-2], ended[-1]
        if (
            before.failure is not None
            and after.failure is not None
            and before.failure.kind == after.failure.kind
            and before.steps_after == after.steps_after
        ):
            return Verdict(
                "stopped",
                f"segments {before.n} and {after.n} failed the same way ({after.failure.kind}) "
                f"at step {after.steps_after}",
            )
        if not before.progressed and not after.progressed:
            return Verdict(
                "stopped", f"no training step saved in segments {before.n} and {after.n}"
            )
    if len(chain.segments) >= chain.max_segments:
        return Verdict("stopped", f"--max-segments {chain.max_segments} used up")
    if chain.gpu_hours is not None and chain.gpu_hours_used >= chain.gpu_hours:
        return Verdict(
            "stopped",
            f"GPU-hour budget spent ({chain.gpu_hours_used:.2f} of {chain.gpu_hours:g})",
        )
    return None
