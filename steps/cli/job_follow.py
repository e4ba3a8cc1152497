"""Rendering a cluster launch and a followed job: shared by run and logs (runners submit)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runners.rundir import JobRecord


def hints(run_dir: Path) -> str:
    return (
        f"  follow: python -m steps logs {run_dir} -f\n"
        f"  status: python -m steps status {run_dir}\n"
        f"  cancel: python -m steps cancel {run_dir}"
    )


def submit_and_report(plan: Any, target: Any, as_json: bool) -> int:
    """Submit; --batch prints the job and returns 0, --run follows and returns the job's code."""
    from runners.launch.submit import recorded_job
    from runners.run.cluster import drive_chain, drives_chain, submit
    from steps.cli.run_render import print_json

    out = sys.stderr if as_json else sys.stdout
    if drives_chain(plan, target):
        done = drive_chain(plan, target, out)
        if done.detached:
            _chain_detached(plan.run_dir, done.job)
        if as_json:
            now = recorded_job(plan.run_dir)
            print_json({**plan.as_json(), "job": now.dump() if now else {}}, plan.secrets)
        return done.code
    job = submit(plan, target)
    if job.submit_note:
        print(f"note: {job.submit_note}", file=sys.stderr)
    where = f" on {job.host}" if job.host else ""
    print(
        f"submitted {job.executor} job {job.job_id}{where}; log: {job.log_path}",
        file=sys.stderr,
        flush=True,
    )
    if not target.attached:
        if as_json:
            print_json({**plan.as_json(), "job": job.dump()}, plan.secrets)
        else:
            print(f"{job.job_id} {job.log_path}")
            print(hints(plan.run_dir), file=sys.stderr)
        return 0
    code = follow(plan.run_dir, job, until_done=True, out=out)
    if as_json:
        print_json({**plan.as_json(), "job": job.dump()}, plan.secrets)
    return code


def follow(
    run_dir: Path, job: JobRecord, until_done: bool, out: Any = None, tail: bool = True
) -> int:
    """Stream the driver log; with until_done, the job's exit code (runners.launch.submit).
    Ctrl-C detaches (130) and says how to follow, check and cancel."""
    from runners.launch.submit import follow as follow_job

    done = follow_job(run_dir, job, until_done, out, tail)
    if done.detached:
        print(f"\ndetached: job {job.job_id} keeps running\n{hints(run_dir)}", file=sys.stderr)
    elif until_done:
        print(f"job {job.job_id} ended: {job.state} (exit code {job.exit_code})", file=sys.stderr)
    return done.code


def _chain_detached(run_dir: Path, job: JobRecord | None) -> None:
    print(
        f"\ndetached: segment job {job.job_id if job else None} runs on to its end, but the "
        "chain stops advancing: no further segment starts while this process is not running. "
        "To go on, run the same command again (it waits for this segment's end and carries "
        f"the chain on from the latest complete checkpoint);\n{hints(run_dir)}",
        file=sys.stderr,
    )
