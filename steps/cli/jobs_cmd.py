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

    from runners.launch.jobs import job_runs, refresh_all
    from runners.launch.request import UNKNOWN
    from runners.rundir import runs_root
    from steps.cli.status_cmd import say

    root = runs_root(args.runs_dir, os.environ, Path.cwd())
    skipped: list = []  # records someone else could have written: never used, one warning each
    runs = [_chain_view(run_dir, data) for run_dir, data in job_runs(root, skipped)]
    for refused in skipped:
        finding = refused.finding
        say(f"warning: {finding.code} {finding.message} (fix: {finding.fix})", err=True)
    jobs = refresh_all(runs)
    lines = _progress_lines(runs, jobs)
    rows = [
        {"run_dir": str(run_dir), "step": data.get("step"), **job, "progress": None, "_line": None}
        for (run_dir, data), job in zip(runs, jobs, strict=True)
    ]
    for row, shown in zip(rows, lines, strict=True):
        row.update(progress=shown.to_dict() if shown else None, _line=shown)
    for row, (_, data) in zip(rows, runs, strict=True):
        if isinstance(data.get("chain"), dict):
            from runners.chain.record import ChainRecord

            row["chain"] = ChainRecord.model_validate(data["chain"]).summary()
    if args.json:
        from steps.cli.run_render import print_json

        jobs = [{k: v for k, v in r.items() if k != "_line"} for r in rows]
        doc = {"runs_root": str(root), "jobs": jobs}
        if skipped:  # records not used (E-RECORD-UNTRUSTED), as findings
            doc["skipped"] = [refused.finding.to_dict() for refused in skipped]
        print_json(doc)
        return 0
    if not rows:
        print(f"no cluster jobs under {root}")
        return 0
    for r in rows:
        code = "" if r.get("exit_code") is None else f" exit {r['exit_code']}"
        where = r.get("host") or r.get("address") or "local"
        progress = f"{r['_line'].line()}  " if r["_line"] else ""
        say(
            f"{r.get('job_id') or '-':<12} {r.get('state') or '?':<10}{code:<8} "
            f"{r.get('step') or '?':<24} {progress}{r.get('executor')}:{r.get('profile')}@{where}  "
            f"{r['run_dir']}"
        )
        if r.get("chain"):
            say(f"{'':<12} {r['chain']}")
    for r in rows:
        if r.get("state") == UNKNOWN:
            say(f"{r['run_dir']}: state unknown: {r.get('reason')}", err=True)
    return 0


NOT_STARTED = ("PENDING", "SUBMITTING", "NOT_SUBMITTED", "UNKNOWN")


def _progress_lines(runs: list, jobs: list[dict]) -> list:
    """Each run's progress (None when it has none to show). Only runs that can have moved are
    read (a job not started has none; an ended job's is kept in run.json as `final_progress`
    the first time), concurrently and each on its own: one unreadable run shows none."""
    import contextlib
    from concurrent.futures import ThreadPoolExecutor

    from runners.launch.request import TERMINAL
    from runners.monitor.progress import Progress
    from runners.rundir import update_record
    from steps.cli.status_cmd import progress_of

    def one(item: tuple) -> object:
        (run_dir, data), job = item
        if job.get("state") in NOT_STARTED or not job.get("job_id"):
            return None
        final = data.get("final_progress")
        progress = None
        if job.get("state") in TERMINAL and isinstance(final, dict):
            with contextlib.suppress(TypeError):  # written by another version of Progress
                progress = Progress(**final)
        if progress is None:
            try:
                progress, _ = progress_of(run_dir, data, job, 5.0)
            except (OSError, ValueError, KeyError, TypeError):  # one odd run: no progress
                return None
            if progress is not None and job.get("state") in TERMINAL:
                update_record(run_dir, final_progress=progress.to_dict())
        return progress if progress and (progress.step or progress.max_steps) else None

    if not runs:
        return []
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(one, zip(runs, jobs, strict=True)))


def _chain_view(run_dir, data: dict) -> tuple:
    """A chain's run with its record read back and `job` = the segment that runs now (a job
    whose cluster is unknown is not asked: runners/launch/records.py)."""
    from runners.launch.records import UNLOCATED

    if not isinstance(data.get("chain"), dict) or data["job"].get(UNLOCATED):
        return run_dir, data
    from runners.chain.follow import refresh_chain

    return run_dir, refresh_chain(run_dir, data)
