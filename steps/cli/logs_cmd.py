"""`logs RUN [-f]`: a cluster job's driver log (ray-driver.log for ray.sub jobs)."""

from __future__ import annotations

import argparse

HELP = "print a cluster job's driver log; -f follows it until the job ends"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from steps.cli.common import add_run_arguments

    parser.add_argument("-f", "--follow", action="store_true", help="follow until the job ends")
    add_run_arguments(parser, ref=True)


def run(args: argparse.Namespace) -> int:
    import sys

    from runners.launch.jobs import find_run
    from runners.run.job_view import followed_job
    from runners.run.judge import verdict
    from steps.cli.pipeline_cmd import pipeline_hook
    from steps.cli.run_render import follow

    if (done := pipeline_hook("logs", args)) is not None:  # a pipeline's root or stage
        return done

    run_dir, data = find_run(args.ref, args.runs_dir)
    judge = verdict(run_dir, data)
    if judge is not None and judge.refused:  # the GPU job never started: the judge's log says why
        print(f"note: {judge.line()}; its log {judge.job.log_path}:", file=sys.stderr, flush=True)
        return follow(run_dir, judge.job, until_done=False, tail=False)
    job = followed_job(run_dir, data)
    if job.log_note:
        print(f"note: {job.log_note}", file=sys.stderr, flush=True)
    code = follow(run_dir, job, until_done=args.follow, tail=args.follow)
    return 130 if code == 130 else 0
