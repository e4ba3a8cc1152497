"""Submitting a planned run to its cluster and following a job: shared by run, logs, status."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from catalog.errors import StepsError
from runners.launch.backends import backend_for_job
from runners.launch.shell import LostContact
from runners.monitor.logscan import terminal_safe
from runners.rundir import update_record


def hints(run_dir: Path) -> str:
    return (
        f"  follow: python -m steps logs {run_dir} -f\n"
        f"  status: python -m steps status {run_dir}\n"
        f"  cancel: python -m steps cancel {run_dir}"
    )


def submit_and_report(plan: Any, target: Any, as_json: bool) -> int:
    """Submit; --batch prints the job and returns 0, --run follows and returns the job's code.

    run.json holds the job's record (its unique name) before anything is submitted, and what
    became of the submission after, whatever happened: no job is queued without a record."""
    from steps.cli.run_render import print_json

    if plan.chain is not None and target.profile.executor == "ray":
        code = drive_ray_chain(plan, target, out=sys.stderr if as_json else sys.stdout)
        if as_json:
            print_json({**plan.as_json(), "job": plan_job(plan.run_dir)}, plan.secrets)
        return code
    if plan.chain is not None:  # the segment script and the chain record, before sbatch
        from runners.chain.submit import prepare_chain

        prepare_chain(plan, target)
    job = target.backend.job_record(plan.request)
    update_record(plan.run_dir, job=job)
    try:
        target.backend.submit(plan.request, job)
    finally:  # a submission refused for certain leaves no run dir
        target.settle(plan.run_dir, plan.step_id, job)
    if job.get("submit_note"):
        print(f"note: {job['submit_note']}", file=sys.stderr)
    where = f" on {job['host']}" if job.get("host") else ""
    print(
        f"submitted {job['executor']} job {job['job_id']}{where}; log: {job['log_path']}",
        file=sys.stderr,
        flush=True,
    )
    if not target.attached:
        if as_json:
            print_json({**plan.as_json(), "job": job}, plan.secrets)
        else:
            print(f"{job['job_id']} {job['log_path']}")
            print(hints(plan.run_dir), file=sys.stderr)
        return 0
    code = follow(plan.run_dir, job, until_done=True, out=sys.stderr if as_json else sys.stdout)
    if as_json:
        print_json({**plan.as_json(), "job": job}, plan.secrets)
    return code if code is not None else 130


def follow(run_dir: Path, job: dict, until_done: bool, out: Any = None, tail: bool = True) -> int:
    """Stream the driver log; with until_done, wait for the end and return the job's exit code.

    Ctrl-C detaches: the job keeps running; prints how to follow, check and cancel; 130.
    Contact lost before the job's end (ssh dropped, Slurm silent too long) is E-REMOTE-LOST,
    exit 2: the job may still run, and the message says how to re-attach.
    """
    if not job.get("job_id"):
        raise StepsError(
            "E-RUN-NO-JOB",
            f"the submission of {run_dir} was never confirmed: {job.get('reason', 'no job id')}",
            fix=f"`python -m steps status {run_dir}` looks the job up by its name again",
            exit_code=2,
        )
    backend = backend_for_job(job)
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalSafe(stdout if out is None else out), TerminalSafe(stderr)
    try:
        code = backend.follow(job, until_done=until_done, follow=tail)
    except KeyboardInterrupt:
        sys.stdout, sys.stderr = stdout, stderr
        print(f"\ndetached: job {job['job_id']} keeps running\n{hints(run_dir)}", file=sys.stderr)
        return 130
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
    if until_done:
        update_record(run_dir, job=job)
        print(
            f"job {job['job_id']} ended: {job.get('state')} (exit code {job.get('exit_code')})",
            file=sys.stderr,
        )
        return int(code) if code is not None else 1
    return 0


class TerminalSafe:
    """A text stream for a job's log: what is written reaches `stream` with every terminal
    control sequence removed (the log's writer must not retitle or clear your terminal)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(terminal_safe(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def plan_job(run_dir: Path) -> dict:
    import json

    return json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("job") or {}


def drive_ray_chain(plan: Any, target: Any, out: Any) -> int:
    """This process drives a Ray chain (runners/chain/ray_driver.py) until it is done or stops.

    Ctrl-C detaches: the running segment goes on to its end and no further segment starts;
    running the same command again carries the chain on (runners/chain/ray_resume.py)."""
    from runners.chain.ray_driver import drive
    from runners.chain.submit import prepare_chain

    prepare_chain(plan, target)
    try:
        return drive(plan.run_dir, plan.request, target.backend, out)
    except KeyboardInterrupt:
        job = plan_job(plan.run_dir)
        print(
            f"\ndetached: segment job {job.get('job_id')} runs on to its end, but the chain stops "
            "advancing: no further segment starts while this process is not running. To go on, "
            "run the same command again (it waits for this segment's end and carries the chain "
            "on from the latest complete checkpoint);\n"
            f"{hints(plan.run_dir)}",
            file=sys.stderr,
        )
        return 130
    except LostContact as lost:
        raise StepsError(
            "E-REMOTE-LOST",
            f"lost contact with {lost.where}; the segment may still run but the chain stops "
            f"advancing ({lost.detail})",
            fix="check the connection; run the same command again to go on from the latest "
            "complete checkpoint",
            exit_code=2,
        ) from None
