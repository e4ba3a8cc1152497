"""`plan FILE`: the resolved pipeline graph with the type on every edge (nothing runs)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from steps.cli.common import add_catalog_arguments
from steps.cli.output import emit_json

HELP = "check a pipeline file and print its resolved graph (types, converters, output paths)"


def add_arguments(parser) -> None:
    parser.add_argument("file", help="pipeline YAML file")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.add_argument("--format", choices=["text", "mermaid"], default="text")
    parser.add_argument("--root", metavar="DIR", help="pipeline run root (default: see file)")
    parser.add_argument(
        "--runs-dir", metavar="DIR", help="runs dir (default $STEPS_RUNS_DIR, ./runs)"
    )
    add_catalog_arguments(parser)


def make_plan(args, for_run: bool = False):
    """Load, plan and return (plan, pipeline file); shared by `plan` and `pipeline run`, which
    on this machine compiles each stage's config as the stage's run will (`for_run`)."""
    from catalog.pipeline import load_pipeline

    pf = load_pipeline(args.file)  # a file that cannot be read stops here, before the rest loads
    from catalog.discovery import discover
    from catalog.planner import default_root, plan_pipeline
    from catalog.types import load_catalog_types
    from runners.config.values import read_config
    from runners.pipeline.stage import stage_reader
    from runners.rundir import runs_root

    cwd = Path.cwd()
    runs = runs_root(args.runs_dir, os.environ, cwd)
    root = (cwd / args.root).resolve() if args.root else default_root(pf, runs)
    graph = load_catalog_types(args.catalog)
    reader = stage_reader(args.nemo_rl, dict(os.environ)) if for_run else read_config
    plan = plan_pipeline(pf, discover(args.catalog), graph, root, reader)
    return plan, pf


def plan_secrets(plan) -> dict[str, str]:
    """Secret values the plan's output must not show (environment and stage overrides)."""
    from runners.config.secret_overrides import known_secrets

    return known_secrets(os.environ, [t for s in plan.stages for t in s.overrides])


def print_plan_findings(plan, secrets: dict[str, str]) -> None:
    from runners.secrets import redact_text

    for f in plan.findings:
        print(redact_text(f.render(), secrets), file=sys.stderr)


def render_text(plan) -> str:
    out = [f"pipeline {plan.name}  ({plan.file})", f"root {plan.root}"]
    if plan.inputs:
        out.append("inputs:")
        w = max(len(n) for n in plan.inputs)
        for n, b in plan.inputs.items():
            out.append(f"  {n:<{w}}  {b.type:<22} {b.value}{'  (hub id)' if b.hub else ''}")
    out.append("stages:")
    for i, s in enumerate(plan.stages, 1):
        tag = "  [inserted converter]" if s.inserted else "  [dry run]" if s.dry_run else ""
        cfg = s.config.stem if s.config.parent.name == "config" else str(s.config)
        over = f"  {' '.join(_overrides(s))}" if s.overrides else ""
        out.append(f"  {i}. {s.id}  {s.step}@{s.version}  -c {cfg}{over}{tag}")
        for p, b in s.inputs.items():
            out.append(
                f"       in  {p} <- {b.source if b.source != 'config' else b.value}  [{b.type}]"
            )
        for p, b in s.outputs.items() if not s.dry_run else ():
            out.append(f"       out {p} -> {b.value}  [{b.type}]")
    out.append("edges:")
    for e in plan.edges:
        note = f" (accepts {e.accepts})" if e.accepts != e.type else ""
        out.append(f"  {e.source} --[{e.type}]--> {e.target}{note}")
    if plan.targets:
        out.append("targets:")
        for ref, b in plan.targets.items():
            out.append(f"  {ref}  [{b.type}]  {b.value}")
    return "\n".join(out)


def _overrides(stage) -> list[str]:
    from runners.secrets import redact_override

    return [redact_override(t, {}) for t in stage.overrides]


def _node(ref: str) -> str:
    return ref.replace(".", "_").replace("-", "_")


def render_mermaid(plan) -> str:
    out = ["flowchart LR"]
    for n, b in plan.inputs.items():
        out.append(f'  in_{_node(n)}[/"{n}<br/>{b.type}"/]')
    for s in plan.stages:
        label = f"{s.id}<br/>{s.step}"
        out.append(
            f'  {_node(s.id)}{{{{"{label}"}}}}' if s.inserted else f'  {_node(s.id)}["{label}"]'
        )
    for e in plan.edges:
        src = e.source.split(".", 1)
        a = f"in_{_node(src[1])}" if src[0] == "inputs" else _node(src[0])
        dst, port = e.target.split(".", 1)
        out.append(f'  {a} -- "{port}: {e.type}" --> {_node(dst)}')
    for i, (ref, b) in enumerate(plan.targets.items()):
        out.append(f'  target_{i}(["{ref}<br/>{b.type}"])')
        out.append(f"  {_node(ref.split('.', 1)[0])} -- {b.type} --> target_{i}")
    return "\n".join(out)


def run(args) -> int:
    from runners.secrets import redact, redact_text

    plan, _ = make_plan(args)
    secrets = plan_secrets(plan)
    if args.json:
        data = plan.to_dict()
        for stage in data["stages"]:
            stage["overrides"] = _overrides(plan.stage(stage["id"]))
        emit_json(redact(data, secrets))
    else:
        print_plan_findings(plan, secrets)
        if plan.ok:
            text = render_mermaid(plan) if args.format == "mermaid" else render_text(plan)
            print(redact_text(text, secrets))
    return 0 if plan.ok else 1
