"""`pipeline run FILE`: run a pipeline's stages in order, cached, each in a child process.

Also `pipeline_hook`, the job commands on a pipeline queued by `pipeline run --batch`: RUN may be
its root or a stage's folder. `status`/`cancel` ROOT act on every stage; `logs`/`diagnose` ROOT
on the one that failed, else is running, else the last (`runners.pipeline.jobs.focus`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from catalog.record_file import read_json
from steps.cli.common import add_catalog_arguments

HELP = "run a pipeline file (plan, then each stage through `run`, with caching and lineage)"


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("run", help="run (or --dry-run) the stages in dependency order")
    p.add_argument("file", help="pipeline YAML file")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="compile and preflight the stages --from/--to/--only select (all by default); "
        "run nothing",
    )
    p.add_argument(
        "--from",
        dest="from_stage",
        metavar="STAGE",
        help="run this stage and everything after it, even if cached",
    )
    p.add_argument(
        "--to",
        dest="to_stage",
        metavar="STAGE",
        help="run this stage and the stages it needs, nothing after it",
    )
    p.add_argument(
        "--only",
        dest="only_stage",
        metavar="STAGE",
        help="run this stage alone (the stages it needs must have completed)",
    )
    p.add_argument(
        "--force",
        action="append",
        default=[],
        metavar="STAGE",
        help="run this stage even if cached (repeatable)",
    )
    p.add_argument("--nemo-rl", metavar="DIR", help="NeMo-RL checkout for the RL stages")
    p.add_argument("--root", metavar="DIR", help="pipeline run root (default: see the file)")
    p.add_argument(
        "--runs-dir",
        metavar="DIR",
        help="runs dir (default $STEPS_RUNS_DIR, ./runs); root = <runs>/pipelines/<name>",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--batch",
        metavar="PROFILE",
        help="queue every stage as a Slurm job after the stages it reads from, then return "
        "(a stage's `profile:` wins)",
    )
    where.add_argument(
        "--run",
        metavar="PROFILE",
        help="drive the stages from here, each `run --run PROFILE` followed to its end (Ray)",
    )
    p.add_argument("--env-file", metavar="PATH", help="env.toml with the profiles")
    p.add_argument("--wandb", action="store_true", help="log W&B artifacts (needs the wandb extra)")
    p.add_argument(
        "--json", action="store_true", help="progress on stderr; one JSON document on stdout"
    )
    add_catalog_arguments(p)


def run(args) -> int:
    from runners.config.compile_once import compile_once

    with compile_once():  # one compile per stage: the plan's, its cache key's, its checks'
        return _run(args)


def _run(args) -> int:
    from steps.cli.plan_cmd import make_plan, plan_secrets, print_plan_findings

    plan, pf = make_plan(args, for_run=not (args.batch or args.run))  # a cluster's NeMo-RL differs
    _resolve_names(plan, pf, args)
    secrets = plan_secrets(plan)
    if not args.json:
        print_plan_findings(plan, secrets)
    if not plan.ok:
        if args.json:
            _emit(plan, secrets, 1)
        return 1
    from runners.pipeline.runner import Options, run_pipeline  # the run stack: a valid plan only

    opts = Options(
        dry_run=args.dry_run,
        from_stage=args.from_stage,
        to_stage=args.to_stage,
        only_stage=args.only_stage,
        force=args.force,
        nemo_rl=args.nemo_rl,
        catalog=args.catalog,
        wandb=args.wandb,
        out=sys.stderr if args.json else sys.stdout,
        profile=args.batch or args.run,
        attached=bool(args.run),
        env_file=args.env_file,
    )
    print(f"pipeline {plan.name}: {len(plan.stages)} stages, root {plan.root}", file=opts.out)
    code = run_pipeline(plan, opts, pf=pf)
    if args.json:
        _emit(plan, secrets, code, dry_run=args.dry_run)
    return code


def _resolve_names(plan, pf, args) -> None:
    """Inputs given by artifact name (`path: NAME:latest`) become their versions' paths."""
    import os

    from catalog.types import load_catalog_types
    from runners.artifacts.resolve import resolve_named_inputs
    from runners.rundir import runs_root

    if all(b.hub or os.path.exists(b.value) for b in plan.inputs.values()):
        return
    root = runs_root(args.runs_dir, os.environ, Path.cwd())
    for hit in resolve_named_inputs(plan, pf, root, load_catalog_types(args.catalog)):
        print(f"input {hit.port}: {hit.ref} -> {hit.path} ({hit.source})", file=sys.stderr)


def _emit(plan, secrets: dict[str, str], code: int, dry_run: bool = False) -> None:
    """The one document: the plan's findings, the exit code and (after a run) pipeline.json."""
    from steps.cli.output import document, emit_json

    path = plan.root / "pipeline.json"
    summary = read_json(path) if not dry_run and path.is_file() else None
    doc = document(
        plan.findings,
        ok=code == 0,
        pipeline=plan.name,
        root=str(plan.root),
        dry_run=dry_run,
        exit_code=code,
        summary=summary,
    )
    emit_json(doc, secrets)


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
