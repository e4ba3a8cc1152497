"""`status RUN`: a cluster job's live state, exit code and training progress (RUN = run dir,
job id or `last`); `-f`/`--watch` refreshes the progress line until the job ends."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runners.rundir import JobRecord

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


def say(text: str, err: bool = False) -> None:
    """Print a line that may hold text from a job's log or a remote, control sequences removed."""
    import sys

    from runners.monitor.terminal import terminal_safe

    print(terminal_safe(text), file=sys.stderr if err else sys.stdout, flush=True)


def run(args: argparse.Namespace) -> int:
    """0 when the state shown is what the cluster says now; 2 when it could not say."""
    from steps.cli.pipeline_cmd import pipeline_hook

    if (done := pipeline_hook("status", args)) is not None:  # a pipeline's root or stage
        return done
    from runners.launch.jobs import find_run, progress_of
    from runners.launch.request import UNKNOWN
    from runners.run.job_view import live
    from runners.run.judge import verdict

    run_dir, data = find_run(args.ref, args.runs_dir)
    data, shown, chain = live(run_dir, data)
    judge = verdict(run_dir, data)
    code = 2 if shown.state == UNKNOWN else 0
    if code:  # the cluster cannot be asked: no second wait for its files
        progress, why = None, shown.reason
    else:
        progress, why = progress_of(run_dir, data, shown, args.stall_factor)
    if args.json:
        from steps.cli.output import emit_json

        doc = {"run_dir": str(run_dir), "step": data.get("step"), "job": shown.dump()}
        doc["progress"] = progress.to_dict() if progress else None
        if judge is not None:
            doc["upstream_judge"] = judge.to_dict()
        emit_json({**doc, "chain": data["chain"]} if chain else doc)
        return code
    say(f"run dir: {run_dir}")
    say(f"step: {data.get('step')}")
    say(f"job: {shown.executor} {shown.job_id or '-'} (profile {shown.profile})")
    state = f"state: {shown.state}"
    if shown.state == UNKNOWN:
        state += f" (last known {shown.last_known_state}): {shown.reason}"
    elif shown.reason:
        state += f": {shown.reason}"
    say(state + ("" if shown.exit_code is None else f", exit code {shown.exit_code}"))
    say(f"log: {shown.log_path}")
    if judge is not None:
        say(judge.line())
        for found in judge.findings:
            say(found.render("  "))
    if progress is None:
        say(f"progress: unavailable ({why})")
    elif progress.step is not None or progress.max_steps is not None:  # a training run
        say(f"progress: {progress.line()}")
    if chain is not None:
        say(chain.summary())
        for seg in chain.segments:
            say(f"  {seg.line()}")
    if args.watch:
        return _watch(run_dir, data, shown, args)
    return code


def _watch(run_dir, data: dict, job: JobRecord, args: argparse.Namespace) -> int:
    """One line per refresh until the job ends (Ctrl-C leaves, 130); 2 when the cluster has
    not said the state for STEPS_SILENT_SECONDS (runners.launch.jobs.watch)."""
    import time

    from runners.launch.jobs import watch
    from runners.launch.request import UNKNOWN

    for seen in watch(run_dir, data, job, args.interval, args.stall_factor):
        stamp = time.strftime("%H:%M:%S")
        if seen.job.state == UNKNOWN:
            say(f"{stamp} UNKNOWN: {seen.job.reason}")
            if seen.silent:
                return 2
        else:
            line = seen.progress.line() if seen.progress else f"unavailable ({seen.why})"
            say(f"{stamp} {seen.job.state}: {line}")
    return 0
