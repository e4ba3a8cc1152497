"""`chain-step begin|end JOB_DIR`: a chain segment's decisions, run inside its Slurm job.

The segment script (`chain.sbatch`, written by `run --until-done`) calls `begin` before NeMo-RL's
ray.sub (it prints `run` or `skip`) and `end --exit-code N` after it; nobody types this.
"""

from __future__ import annotations

import argparse

HELP = "inside a chain's Slurm job: decide before (begin) and after (end) NeMo-RL runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("phase", choices=("begin", "end"), help="before or after NeMo-RL")
    parser.add_argument("job_dir", metavar="JOB_DIR", help="the run dir as the job sees it")
    parser.add_argument("--exit-code", type=int, default=0, help="with end: ray.sub's exit code")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from runners.chain import segment

    if args.phase == "begin":
        print(segment.begin(Path(args.job_dir)))
        return 0
    segment.end(Path(args.job_dir), args.exit_code)
    return 0
