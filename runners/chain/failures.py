"""A failed segment's failure kind, named by the one classifier (runners/monitor) and its table.

Inside the job the segment's logs are files on shared storage: they are streamed through the
kinds' prefilter (never read whole) and the first error in time, weighed against Slurm's state,
is the segment's kind (catalog/failures.py says whether a retry can help).
"""

from __future__ import annotations

import glob

from runners.chain.record import Failure
from runners.monitor.classify import LogClassifier, diagnose
from runners.monitor.logscan import python_prefilter


def segment_logs(log_dir: str, job_dir: str, job_id: str, restart: int) -> list[str]:
    """A segment's logs: ray.sub's driver, head and worker logs, then the batch output."""
    folder = f"{log_dir}/{job_id}-{restart}-logs" if restart else f"{log_dir}/{job_id}-logs"
    found = [f"{folder}/ray-driver.log", f"{folder}/ray-head.log"]
    found += sorted(glob.glob(f"{glob.escape(folder)}/ray-worker-*.log"))
    return [*found, f"{job_dir}/slurm-{job_id}.out"]


def classify(
    state: str, exit_code: int | None, logs: list[str], scheduler: str = "Slurm"
) -> Failure:
    """The kind of failure that ended a segment (exit code not 0, or killed from outside)."""
    if state == "REQUEUED":  # Slurm put the job back itself (a requeue, a node failure): it reruns
        return Failure(kind="requeued", retryable=True, evidence="Slurm requeued the job")
    classifier = LogClassifier()
    for path in logs:
        try:
            with open(path, "rb") as fh:
                for number, line in python_prefilter(fh):
                    classifier.feed(path, number, line)
        except OSError:
            continue
    found = diagnose(classifier, state, exit_code, scheduler)
    if found.kind is None:  # exit code not 0 and no error found: nothing says a retry helps
        return Failure(kind="unknown", retryable=False, evidence=f"{scheduler} state {state}")
    evidence = found.evidence[0].render() if found.evidence else f"{scheduler} state {state}"
    return Failure(kind=found.kind, retryable=found.retryable, evidence=evidence)
