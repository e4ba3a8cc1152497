"""`chain-step begin|end JOB_DIR`: a chain segment's decisions by hand, inside its Slurm job: the
program its script runs (runners/chain/segment_program.py), from this installation."""

from __future__ import annotations

import argparse

HELP = "inside a chain's Slurm job: decide before (begin) and after (end) NeMo-RL runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("phase", choices=("begin", "end"), help="before or after NeMo-RL")
    parser.add_argument("job_dir", metavar="JOB_DIR", help="the run dir as the job sees it")
    parser.add_argument("--exit-code", type=int, default=0, help="with end: ray.sub's exit code")


def run(args: argparse.Namespace) -> int:
    from runners.chain import segment_program

    extra = [str(args.exit_code)] if args.phase == "end" else []
    return segment_program.main([args.phase, args.job_dir, *extra])
