"""`cancel RUN`: stop a cluster job (scancel, or Ray's stop_job)."""

from __future__ import annotations

import argparse

HELP = "cancel a cluster job (RUN: run dir, job id or `last`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from steps.cli.common import add_run_arguments

    add_run_arguments(parser, ref=True)


def run(args: argparse.Namespace) -> int:
    from steps.cli.pipeline_cmd import pipeline_hook

    if (done := pipeline_hook("cancel", args)) is not None:  # a pipeline's root or stage
        return done
    from runners.launch.jobs import find_run
    from runners.run.job_view import cancel
    from steps.cli.status_cmd import say

    say(cancel(*find_run(args.ref, args.runs_dir)))
    return 0
