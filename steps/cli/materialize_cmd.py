"""`materialize-inputs JOB_DIR -- PROGRAM...`: in a stage's job under `pipeline run --batch`,
derive the inputs an earlier stage wrote after planning, judge them, then exec the program
(runners/pipeline/materialize.py).
"""

from __future__ import annotations

import argparse

HELP = "inside a pipeline stage's job: derive inputs an earlier stage wrote, then run PROGRAM"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_dir", metavar="JOB_DIR", help="the run dir as the job sees it")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- then the stage's program")


def run(args: argparse.Namespace) -> int:
    from runners.pipeline.materialize import main

    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    return main(args.job_dir, program)
