"""`lineage NAME[:ALIAS|:vN]`: how an artifact was made; `lineage RUN_DIR`: what a run produced
(from the artifact registry under the runs root and run.json)."""

from __future__ import annotations

from pathlib import Path

from steps.cli.common import add_json_argument

HELP = "how an artifact was made (NAME[:ALIAS|:vN]), or what a run dir or pipeline root produced"


def add_arguments(parser) -> None:
    parser.add_argument(
        "target",
        help="an artifact (DataBlendsArtifact-rl:latest, ModelArtifact-rlvr:v2), a run dir, or a "
        "pipeline root",
    )
    parser.add_argument(
        "--runs-dir", metavar="DIR", help="runs root (else $STEPS_RUNS_DIR, else ./runs)"
    )
    add_json_argument(parser, "the lineage")


def run(args) -> int:
    import os

    from catalog.record_file import exists_as
    from runners.artifacts import lineage
    from runners.rundir import registry_root

    cwd = Path.cwd()
    run_dir = cwd / args.target
    if exists_as(run_dir / "run.json", file=True):  # a name too long for a path is not a run dir
        run_dir = run_dir.resolve()
        root = Path(args.runs_dir).resolve() if args.runs_dir else _root_of(run_dir)
        doc = lineage.of_run(root, run_dir)
        text = _run_text(doc)
    elif exists_as(run_dir / lineage.PIPELINE_RECORD, file=True):
        doc = lineage.of_pipeline(registry_root(args.runs_dir, os.environ, cwd), run_dir)
        text = "\n".join(
            [f"pipeline {doc['pipeline_root']}"]
            + [f"stage {s['stage']}: " + _run_text(s) for s in doc["stages"]]
        )
    elif exists_as(run_dir) and run_dir.is_dir():
        raise lineage.not_a_record(run_dir)
    else:
        doc = lineage.of_artifact(registry_root(args.runs_dir, os.environ, cwd), args.target)
        text = _artifact_text(doc)
    if args.json:
        from steps.cli.output import document, emit_json

        emit_json(document(lineage=doc))
    else:
        print(text)
    return 0


def _root_of(run_dir: Path) -> Path:
    """The runs root above a run dir: the nearest folder holding the registry, else two up."""
    from runners.artifacts.registry import registry_path

    for folder in run_dir.parents:
        if registry_path(folder).is_file():
            return folder
    return run_dir.parent.parent


def _version(v: dict | None) -> str:
    if not v:
        return "unknown"
    return str(v.get("version") or v.get("describe") or v)


def _artifact_text(doc: dict) -> str:
    made = doc["produced_by"]
    aliases = f" ({', '.join(doc['aliases'])})" if doc["aliases"] else ""
    state = "" if doc["state"] == "ready" else f"  {doc['state'].upper()}"
    lines = [
        f"{doc['artifact']}{aliases}  {doc['type']}{state}",
        *([f"  why      {doc['reason']}"] if doc["reason"] else []),
        f"  path     {doc['path']}  ({doc['files']} files, {doc['bytes']} bytes)",
        f"  digest   {doc['digest'] or 'none yet'}",
        f"  made by  {made['step']} (port {made['port']}) at {doc['created_utc']}",
        f"  run dir  {made['run_dir']}",
        f"  config   {made['config_digest']}",
        f"  NeMo-RL  {_version(made['nemo_rl_version'])}",
        "  inputs:" if doc["inputs"] else "  inputs:  none",
    ]
    for i in doc["inputs"]:
        what = i["artifact"] or i["path"]
        lines.append(f"    {i['port']}: {what}  {i['type']}  {i['digest'] or '(hub id)'}")
    lines.append(f"  versions {', '.join(doc['versions'])}")
    return "\n".join(lines)


def _run_text(doc: dict) -> str:
    none = "  produced: nothing registered (a dry run, a failed run, or one not finished)"
    lines = [f"{doc['run_dir']}  {doc['step']}", "  produced:" if doc["produced"] else none]
    for p in doc["produced"]:
        state = "" if p["state"] == "ready" else f"  {p['state'].upper()}"
        lines.append(f"    {p['artifact']}  {p['type']}  {p['digest']}  {p['path']}{state}")
    for i in doc["inputs"]:
        lines.append(f"  input {i.get('name')}: {i.get('value')}")
    return "\n".join(lines)
