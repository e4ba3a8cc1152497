"""Submitting a run dir's job and following it: no job is queued without a record in run.json,
and the followed log reaches the terminal without control sequences."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from catalog.errors import StepsError
from catalog.record_file import read_json
from runners.launch.records import backend_for_job
from runners.launch.shell import LostContact
from runners.monitor.terminal import terminal_safe
from runners.rundir import JobRecord, update_record

if TYPE_CHECKING:
    from runners.launch.request import LaunchRequest
    from runners.launch.target import ClusterTarget


@dataclass
class Followed:
    """How following a job (or driving a chain) ended: `code` is the command's exit code."""

    code: int
    detached: bool = False  # Ctrl-C: the job keeps running
    job: JobRecord | None = None  # a chain's segment job when it detached


def submit_job(
    run_dir: Path, step_id: str, request: LaunchRequest, target: ClusterTarget
) -> JobRecord:
    """Record the job, submit it, record what became of it (`ClusterTarget.settle`)."""
    job = target.backend.job_record(request)
    update_record(run_dir, job=job.dump())
    try:
        target.backend.submit(request, job)
    finally:
        target.settle(run_dir, step_id, job)
    return job


def follow(
    run_dir: Path, job: JobRecord, until_done: bool, out: TextIO | None = None, tail: bool = True
) -> Followed:
    """Stream the driver log to `out` (else stdout); with until_done, record the end and return
    the job's exit code (1 when none). Ctrl-C detaches (130); contact lost is E-REMOTE-LOST."""
    if not job.job_id:
        raise StepsError(
            "E-RUN-NO-JOB",
            f"the submission of {run_dir} was never confirmed: {job.reason or 'no job id'}",
            fix=f"`python -m steps status {run_dir}` looks the job up by its name again",
            exit_code=2,
        )
    backend = backend_for_job(job)
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalSafe(stdout if out is None else out), TerminalSafe(stderr)
    try:
        code = backend.follow(job, until_done=until_done, follow=tail)
    except KeyboardInterrupt:
        return Followed(130, detached=True)
    except LostContact as lost:
        raise StepsError(
            "E-REMOTE-LOST",
            f"lost contact with {lost.where}, the job may still run; re-attach with "
            f"`python -m steps logs {run_dir} -f` ({terminal_safe(lost.detail)})",
            fix=f"check the connection (or that Slurm answers there); `python -m steps status "
            f"{run_dir}` shows the job's state",
            exit_code=2,
        ) from None
    finally:
        sys.stdout, sys.stderr = stdout, stderr
    if not until_done:
        return Followed(0)
    update_record(run_dir, job=job.dump())
    return Followed(int(code) if code is not None else 1)


class TerminalSafe:
    """`stream` with every terminal control sequence removed from what is written."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(terminal_safe(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def recorded_job(run_dir: Path) -> JobRecord | None:
    """The job run.json holds now (None when none)."""
    data = read_json(run_dir / "run.json")
    return JobRecord.model_validate(data["job"]) if data.get("job") else None
