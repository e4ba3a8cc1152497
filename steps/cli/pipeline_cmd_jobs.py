"""The job commands on a pipeline queued by `pipeline run --batch`: RUN may be its root or a
stage's folder. `status`/`cancel` ROOT act on every stage; `logs`/`diagnose` ROOT on the one
that failed, else is running, else the last (`runners.pipeline.jobs.focus`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _path(args: argparse.Namespace) -> Path | None:
    ref = getattr(args, "ref", None)
    return (Path.cwd() / ref).resolve() if ref else None


def pipeline_hook(command: str, args: argparse.Namespace) -> int | None:
    """Handle `command` for a pipeline root and return its exit code, or point `args.ref` at the
    stage run it means and return None (the command goes on as for any run)."""
    from runners.pipeline.jobs import focus, pipeline_record, pipeline_states, stage_run_dir

    path = _path(args)
    if path is None:
        return None
    stage = stage_run_dir(path)
    if stage is not None:
        args.ref = str(stage)
        return None
    record = pipeline_record(path)
    if record is None:
        return None
    if command == "cancel":
        from runners.pipeline.jobs import cancel_pipeline

        for line in cancel_pipeline(record):
            print(line)
        return 0
    states = pipeline_states(record)
    if command == "status":
        return _status(record, states, getattr(args, "json", False))
    chosen = focus(states)
    if chosen is None or not chosen.run_dir:
        print(f"pipeline {record['pipeline']}: no stage ran", file=sys.stderr)
        return 2
    print(f"pipeline {record['pipeline']}: stage {chosen.id} ({chosen.status})", file=sys.stderr)
    args.ref = chosen.run_dir
    return None


def _status(record: dict, states: list, as_json: bool) -> int:
    """Every stage's state and the pipeline's; 2 when a stage's cluster could not say."""
    from runners.pipeline.jobs import verdict

    state, named = verdict(states)
    code = 2 if state == "unknown" else 0
    if as_json:
        from steps.cli.output import emit_json

        emit_json(
            {
                "pipeline": record["pipeline"],
                "root": record["root"],
                "state": state,
                "stage": named.id if named else None,
                "stages": [s.to_dict() for s in states],
            }
        )
        return code
    at = f" at stage {named.id}" if named is not None and state != "completed" else ""
    print(f"pipeline {record['pipeline']}: {state}{at}")
    width = max((len(s.id) for s in states), default=0)
    for s in states:
        job = f"job {s.job_id}" if s.job_id else "-"
        print(f"  {s.id:<{width}}  {s.status:<9}  {job:<12}  {s.detail}")
        if s.status == "failed" and s.run_dir:
            print(f"  {'':<{width}}  logs: python -m steps logs {s.run_dir}")
    return code
