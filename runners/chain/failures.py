"""A failed segment's failure kind, named by the one classifier (runners/monitor) and its table.

The rules are `rules.classify` (a Slurm segment classifies on its node with them). Inside the
job the segment's logs are files on shared storage: they are streamed through the
kinds' prefilter (never read whole) and the first error in time, weighed against Slurm's state,
is the segment's kind (catalog/failures.py says whether a retry can help).
"""

from __future__ import annotations

from runners.chain import rules
from runners.chain.record import Failure


def segment_logs(log_dir: str, job_dir: str, job_id: str, restart: int) -> list[str]:
    """A segment's logs: ray.sub's driver, head and worker logs, then the batch output."""
    return rules.segment_logs(log_dir, job_dir, job_id, restart)


def classify(
    state: str, exit_code: int | None, logs: list[str], scheduler: str = "Slurm"
) -> Failure:
    """The kind of failure that ended a segment (exit code not 0, or killed from outside)."""
    return Failure.model_validate(rules.classify(state, exit_code, logs, scheduler))
