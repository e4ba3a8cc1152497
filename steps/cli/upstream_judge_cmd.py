"""`upstream-judge JOB_DIR --launcher CMD`: in the CPU job before the GPU job
(runners/run/judge.py), the image's NeMo-RL judges the run dir's config; exit 1 on an error."""

from __future__ import annotations

import argparse

HELP = "inside a cluster job: NeMo-RL in this image judges the run dir's config (exit 1: refused)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_dir", metavar="JOB_DIR", help="the run dir as the job sees it")
    parser.add_argument(
        "--launcher", required=True, metavar="CMD", help="what starts NeMo-RL's script there"
    )


def run(args: argparse.Namespace) -> int:
    import os
    import sys
    from pathlib import Path

    from catalog.errors import has_errors
    from runners.preflight.judge_in_job import judge_job_dir, report

    findings = judge_job_dir(Path(args.job_dir), args.launcher, os.environ)
    sys.stdout.write(report(findings))
    sys.stdout.flush()
    return 1 if has_errors(findings) else 0
