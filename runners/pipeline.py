"""Run a planned pipeline: each stage through `python -m steps run` in a child process, cached.

A stage is skipped when its record says it completed with the same cache key (step id and
version, compiled config hash, input fingerprints, output places) and its outputs are unchanged
since (or still pass their contract). A failing stage stops the pipeline; the records of the
stages before it stay, so the next `pipeline run` resumes at the failed stage. Outputs of a
completed stage that must run again are moved aside to `<stage>/_stale/`, never deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from catalog.errors import Finding, StepsError
from runners.lineage import cache_key, fingerprint, read_json, write_json

RECORD = "record.json"
SUMMARY = "pipeline.json"
LOG = "stage.log"


@dataclass
class Options:
    dry_run: bool = False
    from_stage: str | None = None
    force: list[str] = field(default_factory=list)
    nemo_rl: str | None = None
    catalog: list[str] = field(default_factory=list)
    wandb: bool = False
    out: TextIO = sys.stdout


def _stamps(paths: list[str]) -> dict[str, list[int]] | None:
    try:
        return {p: [(st := os.stat(p)).st_mtime_ns, st.st_size] for p in paths}
    except OSError:
        return None


def config_hash(stage: Any, previous: dict | None = None) -> tuple[str, dict]:
    """sha256 of the compiled config (interpolations kept) and the files it came from.

    When the previous record names the same config files, unchanged, with the same overrides,
    its hash is reused: compiling costs ~50 ms a stage and would dominate a cached re-run.
    """
    prev = (previous or {}).get("config_sources")
    if (
        prev
        and (previous or {}).get("overrides") == list(stage.overrides)
        and (previous or {}).get("config") == str(stage.config)
        and _stamps(list(prev)) == prev
    ):
        return previous["config_hash"], prev
    from runners.config import compile_config

    compiled = compile_config(stage.config, list(stage.overrides))
    digest = hashlib.sha256(compiled.to_yaml().encode()).hexdigest()
    return digest, _stamps([str(p) for p in compiled.sources]) or {}


def _stage_dir(plan: Any, stage: Any) -> Path:
    return plan.root / stage.id


def _argv(stage: Any, opts: Options, runs_dir: Path, force: bool) -> list[str]:
    argv = [sys.executable, "-m", "steps", "run", stage.step, "--config", str(stage.config)]
    for port, b in [*stage.inputs.items(), *stage.outputs.items()]:
        argv.append(f"--input={port}={b.value}")
    argv += [f"--runs-dir={runs_dir}"] + [f"--catalog={c}" for c in opts.catalog]
    if opts.nemo_rl:
        argv.append(f"--nemo-rl={opts.nemo_rl}")
    if force:
        argv.append("--force")
    if opts.dry_run:
        argv += ["--dry-run", "--json"]
    return argv + list(stage.overrides)


def _inputs_now(stage: Any) -> dict:
    return {
        p: {
            "value": b.value,
            "source": b.source,
            "type": b.type,
            "fingerprint": fingerprint(b.value, b.hub),
        }
        for p, b in stage.inputs.items()
    }


def _outputs_now(stage: Any) -> dict:
    return {
        p: {"value": b.value, "type": b.type, "fingerprint": fingerprint(b.value)}
        for p, b in stage.outputs.items()
    }


def _contract_ok(type_name: str, path: str) -> bool:
    """The output still passes its type's contract (existence when contracts are unavailable)."""
    if not os.path.exists(path):
        return False
    try:
        from catalog.contracts import validate_artifact
    except ImportError:
        return True
    try:
        return validate_artifact(type_name, path, max_errors=1).ok
    except StepsError:
        return False


def _cache_hit(record: dict | None, key: str, stage: Any) -> str | None:
    """Why the stage can be skipped, or None."""
    if not record or record.get("status") != "completed" or record.get("cache_key") != key:
        return None
    now = _outputs_now(stage)
    for port, out in now.items():
        then = record.get("outputs", {}).get(port, {})
        if out["fingerprint"] == then.get("fingerprint") and "missing" not in out["fingerprint"]:
            continue
        if not _contract_ok(out["type"], out["value"]):
            return None
    return "cached"


def _move_aside(stage: Any, sdir: Path) -> list[str]:
    moved = []
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for port, b in stage.outputs.items():
        p = Path(b.value)
        if p.exists():
            dest = sdir / "_stale" / f"{port}-{stamp}"
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(p, dest)
            moved.append(str(dest))
    return moved


def _run_child(argv: list[str], log: Path, out: TextIO, env: dict) -> int:
    """Run one stage, streaming its output to `out` and to the stage log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as fh:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            bufsize=1,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            out.write(f"  | {line}")
        return proc.wait()


def _select(plan: Any, opts: Options) -> tuple[set[str], set[str]]:
    """(stages to consider, stages forced to run) from --from and --force."""
    ids = [s.id for s in plan.stages]
    for sid in [*opts.force, *([opts.from_stage] if opts.from_stage else [])]:
        if sid not in ids:
            import difflib

            near = difflib.get_close_matches(sid, ids, n=1)
            raise StepsError(
                "E-PIPELINE-STAGE",
                f"no stage '{sid}' in pipeline {plan.name}",
                fix=f"did you mean {near[0]}?" if near else f"stages: {', '.join(ids)}",
                exit_code=2,
            )
    forced = set(opts.force)
    if not opts.from_stage:
        return set(ids), forced
    down = {opts.from_stage}
    for s in plan.stages:  # plan order is topological
        if set(s.after) & down:
            down.add(s.id)
    return down, forced | down


def _planned_missing(stage: Any) -> dict[str, Any]:
    """Inputs produced by earlier stages that do not exist yet (dry run: checked by type)."""
    return {p: b for p, b in stage.inputs.items() if b.producer and not os.path.exists(b.value)}


def _about(f: dict, port_keys: list[str], value: str) -> bool:
    key = str(f.get("key") or "")
    generic = ".".join(p for p in key.split(".") if not p.isdigit())
    if any(k in (key, generic) or key.startswith(k + ".") for k in port_keys):
        return True
    return bool(f.get("path")) and str(f["path"]).startswith(value)


def _port_keys(stage: Any, port: str) -> list[str]:
    from catalog.tomlfile import load_toml

    data = load_toml(stage.step_dir / "step.toml")
    spec = next((p for p in data.get("consumes", []) if p.get("name") == port), {})
    return list(spec.get("config_keys", []))


def dry_run(plan: Any, opts: Options, env: dict) -> int:
    """Compile and preflight every stage; inputs not produced yet are checked by planned type."""
    worst = 0
    out = opts.out
    for i, stage in enumerate(plan.stages, 1):
        sdir = _stage_dir(plan, stage)
        argv = _argv(stage, opts, sdir / "_runs", force=False)
        proc = subprocess.run(argv, capture_output=True, text=True, env=env)
        tag = " [inserted]" if stage.inserted else ""
        out.write(f"{i}. {stage.id} ({stage.step}){tag}\n")
        try:
            data = json.loads(proc.stdout) if proc.stdout.strip() else {}
        except ValueError:
            data = {}
        pending = _planned_missing(stage)
        keys = {p: _port_keys(stage, p) for p in pending}
        shown = warnings = 0
        for f in data.get("findings", []):
            if any(_about(f, keys[p], b.value) for p, b in pending.items()):
                continue
            fd = Finding(
                **{k: f.get(k) for k in ("code", "message", "path", "line", "fix", "key")},
                severity=f.get("severity", "error"),
            )
            if not fd.is_error:
                warnings += 1
                continue
            shown += 1
            out.write(f"   {fd.render()}\n")
            worst = max(worst, 1)
        if warnings:
            out.write(f"   {warnings} warning(s): see {data.get('run_dir', sdir)}/run.json\n")
        for p, b in pending.items():
            out.write(f"   input {p} <- {b.source}: not produced yet, planned {b.type}\n")
        errors = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        if proc.returncode not in (0, 1) or (proc.returncode == 1 and not data):
            for ln in errors[-3:]:
                out.write(f"   {ln}\n")
            worst = max(worst, proc.returncode)
        if proc.returncode == 0 and not shown:
            out.write("   preflight clean\n")
    out.write(
        f"dry run: {'clean' if worst == 0 else 'problems found'} ({len(plan.stages)} stages)\n"
    )
    return worst


def _input_artifact_names(plan: Any, stage: Any, lineage: Any) -> dict[str, str]:
    from runners.lineage import artifact_name

    names = {}
    for port, b in stage.inputs.items():
        if b.producer:
            prod = plan.stage(b.producer)
            names[port] = artifact_name(prod.step, b.type, lineage._is_model(b.type), prod.id)
        elif b.source.startswith("inputs."):
            names[port] = f"{b.type}-{b.source.split('.', 1)[1]}"
        else:
            names[port] = f"{b.type}-{stage.id}-{port}"
    return names


def run_pipeline(plan: Any, opts: Options, env: dict | None = None) -> int:
    """Run every stage in order; 0 when all completed or were cached, else the failure's code."""
    env = dict(os.environ if env is None else env)
    out = opts.out
    unset = [n for n, b in plan.inputs.items() if b.value == "???"]
    if unset:
        raise StepsError(
            "E-PIPELINE-INPUT-UNSET",
            f"input '{unset[0]}' has no path (???)",
            path=str(plan.file),
            fix=f"set inputs.{unset[0]}.path in the pipeline file",
        )
    if opts.dry_run:
        return dry_run(plan, opts, env)
    consider, forced = _select(plan, opts)
    lineage = None
    if opts.wandb or plan.lineage.get("wandb"):
        from catalog.types import load_catalog_types
        from runners.lineage import WandbLineage

        lineage = WandbLineage(
            plan.name,
            plan.lineage.get("project"),
            plan.lineage.get("entity"),
            load_catalog_types(opts.catalog),
        )
    summary: dict[str, Any] = {
        "pipeline": plan.name,
        "file": str(plan.file),
        "root": str(plan.root),
        "started": time.time(),
        "stages": {},
    }
    code = 0
    for stage in plan.stages:
        sdir = _stage_dir(plan, stage)
        record_path = sdir / RECORD
        previous = read_json(record_path)
        if stage.id not in consider:
            status = (previous or {}).get("status")
            if status != "completed":
                raise StepsError(
                    "E-PIPELINE-FROM",
                    f"--from {opts.from_stage}: stage '{stage.id}' before it has not completed",
                    fix="run the pipeline without --from first",
                )
            summary["stages"][stage.id] = {"status": "completed", "action": "not selected"}
            out.write(f"{stage.id}: not selected (completed earlier)\n")
            continue
        inputs = _inputs_now(stage)
        chash, sources = config_hash(stage, previous)
        outs = {p: b.value for p, b in stage.outputs.items()}
        key = cache_key(
            stage.step, stage.version, chash, {p: i["fingerprint"] for p, i in inputs.items()}, outs
        )
        if stage.id not in forced and _cache_hit(previous, key, stage):
            summary["stages"][stage.id] = {
                "status": "completed",
                "action": "cached",
                "cache_key": key,
            }
            out.write(f"{stage.id}: cached ({key[:12]})\n")
            continue
        moved = []
        if previous and not (
            previous.get("status") != "completed" and previous.get("cache_key") == key
        ):
            moved = _move_aside(stage, sdir)  # a different job's outputs; same failed job resumes
        record = {
            "stage": stage.id,
            "step": stage.step,
            "version": stage.version,
            "inserted": stage.inserted,
            "config": str(stage.config),
            "overrides": stage.overrides,
            "config_hash": chash,
            "config_sources": sources,
            "cache_key": key,
            "inputs": inputs,
            "outputs": {p: {"value": v} for p, v in outs.items()},
            "status": "running",
            "started": time.time(),
            "moved_aside": moved,
        }
        write_json(record_path, record)
        argv = _argv(stage, opts, sdir / "_runs", force=True)
        out.write(f"{stage.id}: running {stage.step}\n")
        t0 = time.perf_counter()
        rc = _run_child(argv, sdir / LOG, out, env)
        record.update(
            finished=time.time(),
            duration_s=round(time.perf_counter() - t0, 3),
            exit_status=rc,
            command=argv[1:],
        )
        if rc == 0:
            record["outputs"] = _outputs_now(stage)
            bad = [
                p for p, o in record["outputs"].items() if not _contract_ok(o["type"], o["value"])
            ]
            if bad:
                record["status"] = "failed"
                record["error"] = f"output(s) {', '.join(bad)} missing or failing their contract"
                rc = 1
            else:
                record["status"] = "completed"
        else:
            record["status"] = "failed"
        write_json(record_path, record)
        summary["stages"][stage.id] = {
            "status": record["status"],
            "action": "ran",
            "exit_status": rc,
            "cache_key": key,
        }
        if record["status"] != "completed":
            why = record.get("error") or f"exit {rc}"
            out.write(f"{stage.id}: FAILED ({why}); log {sdir / LOG}\n")
            out.write("fix the cause and run the pipeline again: completed stages are cached\n")
            code = rc or 1
            break
        out.write(f"{stage.id}: completed in {record['duration_s']:.1f}s\n")
        if lineage is not None:
            lineage.log_stage(stage, record, _input_artifact_names(plan, stage, lineage))
    summary.update(
        finished=time.time(),
        status="completed" if code == 0 else "failed",
        targets={r: b.value for r, b in plan.targets.items()},
    )
    write_json(plan.root / SUMMARY, summary)
    return code
