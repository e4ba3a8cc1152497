"""`cancel RUN`: stop a cluster job (scancel, or Ray's stop_job)."""

from __future__ import annotations

import argparse

HELP = "cancel a cluster job (RUN: run dir, job id or `last`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from steps.cli.common import add_run_arguments

    add_run_arguments(parser, ref=True)


def run(args: argparse.Namespace) -> int:
    from catalog.errors import StepsError
    from runners.launch.backends import backend_for_job
    from runners.launch.jobs import find_run, refresh
    from steps.cli.status_cmd import say

    run_dir, data = find_run(args.ref, args.runs_dir)
    if isinstance(data.get("chain"), dict):
        from runners.chain.follow import cancel_chain, refresh_chain

        say(cancel_chain(data, run_dir))
        refresh_chain(run_dir, data)
        return 0
    job = data["job"] if data["job"].get("job_id") else refresh(run_dir, data)
    if not job.get("job_id"):  # sbatch never confirmed it and Slurm knows no such name
        raise StepsError(
            "E-CANCEL",
            f"no job to cancel for {run_dir}: {job.get('reason', 'it was never submitted')}",
            fix="`python -m steps status RUN` shows what became of the submission",
            exit_code=2,
        )
    say(backend_for_job(job).cancel(job))
    return 0
