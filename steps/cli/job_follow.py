"""Rendering a cluster launch and a followed job: shared by run and logs (runners submit)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runners.launch.submit import Followed
    from runners.run.execute import Ended, Submitted
    from runners.rundir import JobRecord


def hints(run_dir: Path) -> str:
    return (
        f"  follow: python -m steps logs {run_dir} -f\n"
        f"  status: python -m steps status {run_dir}\n"
        f"  cancel: python -m steps cancel {run_dir}"
    )


def submitted(event: Submitted) -> None:
    """The queued job, on stderr (stdout is the job id line of --batch, or the log)."""
    job = event.job
    if job.submit_note:
        print(f"note: {job.submit_note}", file=sys.stderr)
    where = f" on {job.host}" if job.host else ""
    judge = event.judge
    if judge is not None:  # NeMo-RL's own checks in the image, a CPU job before this one
        how = "passed" if judge.exit_code == 0 else f"runs first; job {job.job_id} waits for it"
        print(f"upstream judge: {judge.executor} job {judge.job_id} {how}; log: "
              f"{judge.log_path}", file=sys.stderr)  # fmt: skip
    print(
        f"submitted {job.executor} job {job.job_id}{where}; log: {job.log_path}",
        file=sys.stderr,
        flush=True,
    )


def ended(event: Ended) -> None:
    """How following ended: detached (Ctrl-C) says how to go on; else the job's end."""
    if event.chain:
        if event.followed.detached:
            _chain_detached(event.run_dir, event.job)
    elif event.job is not None:
        report(event.run_dir, event.job, event.followed, until_done=True)
        if not event.followed.detached:
            _judge_refused(event.run_dir)


def _judge_refused(run_dir: Path) -> None:
    """A GPU job the upstream judge held back: why, with the judge's findings."""
    from runners.run.judge import verdict
    from runners.rundir import read_record

    judge = verdict(run_dir, read_record(run_dir))
    if judge is not None and judge.refused:
        print("\n".join([judge.line(), *(f.render("  ") for f in judge.findings)]), file=sys.stderr)


def follow(
    run_dir: Path, job: JobRecord, until_done: bool, out: Any = None, tail: bool = True
) -> int:
    """Stream the driver log; with until_done, the job's exit code (Ctrl-C detaches: 130)."""
    from runners.launch.submit import follow as follow_job

    followed = follow_job(run_dir, job, until_done, out, tail)
    report(run_dir, job, followed, until_done)
    return followed.code


def report(run_dir: Path, job: JobRecord, followed: Followed, until_done: bool) -> None:
    """Detached: how to follow, check and cancel; ended (until_done): its state and code."""
    if followed.detached:
        print(f"\ndetached: job {job.job_id} keeps running\n{hints(run_dir)}", file=sys.stderr)
    elif until_done:
        print(f"job {job.job_id} ended: {job.state} (exit code {job.exit_code})", file=sys.stderr)


def _chain_detached(run_dir: Path, job: JobRecord | None) -> None:
    print(
        f"\ndetached: segment job {job.job_id if job else None} runs on to its end, but the "
        "chain stops advancing: no further segment starts while this process is not running. "
        "To go on, run the same command again (it waits for this segment's end and carries "
        f"the chain on from the latest complete checkpoint);\n{hints(run_dir)}",
        file=sys.stderr,
    )
