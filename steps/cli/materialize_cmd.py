"""`materialize-inputs JOB_DIR -- PROGRAM...`: inside a pipeline stage's job, before its program.

A stage queued with `pipeline run --batch` reads what an earlier stage writes after it was
planned; its job runs this first (from the copy of steps staged with its run dir) to derive
those inputs (rows from an rl_prep manifest, a checkpoint's latest step_N) and judge them by the
stage's contract, then execs the program (runners/pipeline/materialize.py).
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
