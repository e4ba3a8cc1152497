"""`jobs`: the cluster runs launched from here (under ./runs), newest first, with live state and
the training progress (step of max, metric, time/step, ETA, GPU-hours) on the same line."""

from __future__ import annotations

import argparse

HELP = "list cluster jobs launched from here, newest first, with their live state"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from steps.cli.common import add_run_arguments

    add_run_arguments(parser, ref=False)
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def run(args: argparse.Namespace) -> int:
    """Every run's live state, hosts asked concurrently; a run whose cluster cannot say is
    listed as UNKNOWN with why (stderr), the others as their clusters say. A run.json someone
    else could have written is left out with one warning line (runners/launch/records.py)."""
    import os
    from pathlib import Path

    from runners.launch.request import UNKNOWN
    from runners.run.job_view import job_rows, listed_runs
    from runners.rundir import runs_root
    from steps.cli.status_cmd import say

    root = runs_root(args.runs_dir, os.environ, Path.cwd())
    skipped: list = []  # records someone else could have written: never used, one warning each
    runs = listed_runs(root, skipped)
    for refused in skipped:
        finding = refused.finding
        say(f"warning: {finding.code} {finding.message} (fix: {finding.fix})", err=True)
    listed = job_rows(runs)
    if args.json:
        from steps.cli.output import emit_json

        doc = {"runs_root": str(root), "jobs": [row.to_dict() for row in listed]}
        if skipped:  # records not used (E-RECORD-UNTRUSTED), as findings
            doc["skipped"] = [refused.finding.to_dict() for refused in skipped]
        emit_json(doc)
        return 0
    if not listed:
        print(f"no cluster jobs under {root}")
        return 0
    for row in listed:
        job = row.job
        code = "" if job.exit_code is None else f" exit {job.exit_code}"
        where = job.host or job.address or "local"
        progress = f"{row.progress.line()}  " if row.progress else ""
        say(
            f"{job.job_id or '-':<12} {job.state or '?':<10}{code:<8} "
            f"{row.step or '?':<24} {progress}{job.executor}:{job.profile}@{where}  "
            f"{row.run_dir}"
        )
        if row.chain:
            say(f"{'':<12} {row.chain}")
    for row in listed:
        if row.job.state == UNKNOWN:
            say(f"{row.run_dir}: state unknown: {row.job.reason}", err=True)
    return 0
