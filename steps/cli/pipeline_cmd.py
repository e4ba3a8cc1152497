"""`pipeline run FILE`: run a pipeline's stages in order, cached, each in a child process."""

from __future__ import annotations

import sys

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
    from pathlib import Path

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

    summary = None
    path = plan.root / "pipeline.json"
    if not dry_run and path.is_file():
        summary = read_json(path)
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
