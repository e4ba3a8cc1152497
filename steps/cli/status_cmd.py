"""`status RUN`: a cluster job's live state and exit code (RUN = run dir, job id or `last`)."""

from __future__ import annotations

import argparse

HELP = "show a cluster job's state and exit code (RUN: run dir, job id or `last`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from steps.cli.common import add_run_arguments

    add_run_arguments(parser, ref=True)
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def run(args: argparse.Namespace) -> int:
    from runners.launch.jobs import find_run, refresh

    run_dir, data = find_run(args.ref, args.runs_dir)
    job = refresh(run_dir, data)
    if args.json:
        from steps.cli.run_render import print_json

        print_json({"run_dir": str(run_dir), "step": data.get("step"), "job": job})
        return 0
    code = job.get("exit_code")
    print(f"run dir: {run_dir}")
    print(f"step: {data.get('step')}")
    print(f"job: {job['executor']} {job['job_id']} (profile {job.get('profile')})")
    print(f"state: {job.get('state')}" + ("" if code is None else f", exit code {code}"))
    print(f"log: {job.get('log_path')}")
    return 0
