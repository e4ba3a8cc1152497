"""`status RUN`: a cluster job's live state, exit code and training progress (RUN = run dir,
job id or `last`); `-f`/`--watch` refreshes the progress line until the job ends."""

from __future__ import annotations

import argparse

HELP = "show a cluster job's state, exit code and progress (RUN: run dir, job id or `last`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from steps.cli.common import add_run_arguments

    add_run_arguments(parser, ref=True)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "-f", "--watch", action="store_true", help="refresh the progress line until the job ends"
    )
    parser.add_argument(
        "--interval", type=float, default=10.0, metavar="S", help="seconds between refreshes"
    )
    parser.add_argument(
        "--stall-factor",
        type=float,
        default=5.0,
        metavar="K",
        help="STALLED after K x the median step time with no new log line (default 5)",
    )


def progress_of(run_dir, data: dict, job: dict, stall_factor: float):
    """The run's Progress, or None with the reason when its files cannot be read."""
    from catalog.errors import StepsError
    from runners.launch.observe import run_progress

    try:
        return run_progress(run_dir, {**data, "job": job}, [job], stall_factor), None
    except StepsError as exc:
        return None, exc.finding.message


def run(args: argparse.Namespace) -> int:
    from runners.launch.jobs import find_run, refresh

    run_dir, data = find_run(args.ref, args.runs_dir)
    job = refresh(run_dir, data)
    progress, why = progress_of(run_dir, data, job, args.stall_factor)
    if args.json:
        from steps.cli.run_render import print_json

        doc = {"run_dir": str(run_dir), "step": data.get("step"), "job": job}
        doc["progress"] = progress.to_dict() if progress else None
        print_json(doc)
        return 0
    code = job.get("exit_code")
    print(f"run dir: {run_dir}")
    print(f"step: {data.get('step')}")
    print(f"job: {job['executor']} {job['job_id']} (profile {job.get('profile')})")
    print(f"state: {job.get('state')}" + ("" if code is None else f", exit code {code}"))
    print(f"log: {job.get('log_path')}")
    print(f"progress: {progress.line() if progress else f'unavailable ({why})'}", flush=True)
    if args.watch:
        return _watch(run_dir, data, job, args)
    return 0


def _watch(run_dir, data: dict, job: dict, args: argparse.Namespace) -> int:
    """One line per refresh until the job reaches a terminal state (Ctrl-C leaves, 130)."""
    import time

    from runners.launch.jobs import refresh
    from runners.launch.request import TERMINAL

    while job.get("state") not in TERMINAL:
        time.sleep(max(args.interval, 0.1))
        data = {**data, "job": job}
        job = refresh(run_dir, data)
        progress, why = progress_of(run_dir, data, job, args.stall_factor)
        stamp = time.strftime("%H:%M:%S")
        line = progress.line() if progress else f"unavailable ({why})"
        print(f"{stamp} {job.get('state')}: {line}", flush=True)
    return 0
