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
    import os
    from pathlib import Path

    from runners.launch.jobs import job_runs, refresh
    from runners.rundir import runs_root
    from steps.cli.status_cmd import progress_of

    root = runs_root(args.runs_dir, os.environ, Path.cwd())
    rows = []
    for run_dir, data in job_runs(root):
        job = refresh(run_dir, data)
        progress, _ = progress_of(run_dir, data, job, 5.0)
        shown = progress if progress and (progress.step or progress.max_steps) else None
        row = {"run_dir": str(run_dir), "step": data.get("step"), **job}
        rows.append({**row, "progress": shown.to_dict() if shown else None, "_line": shown})
    if args.json:
        from steps.cli.run_render import print_json

        jobs = [{k: v for k, v in r.items() if k != "_line"} for r in rows]
        print_json({"runs_root": str(root), "jobs": jobs})
        return 0
    if not rows:
        print(f"no cluster jobs under {root}")
        return 0
    for r in rows:
        code = "" if r.get("exit_code") is None else f" exit {r['exit_code']}"
        where = r.get("host") or r.get("address") or "local"
        progress = f"{r['_line'].line()}  " if r["_line"] else ""
        print(
            f"{r['job_id']:<12} {r.get('state', '?'):<10}{code:<8} {r['step']:<24} {progress}"
            f"{r['executor']}:{r['profile']}@{where}  {r['run_dir']}"
        )
    return 0
