"""Run a planned pipeline here: each stage through `python -m steps run` in a child process.

A stage is skipped when its record completed with the same cache key (`stage.stage_key`) and its
outputs are unchanged or still pass their contract. A failing stage stops the pipeline and the next
run resumes there; outputs of a completed stage that must run again move to `<stage>/_stale/` (the
last one kept). An interrupt (Ctrl-C, SIGTERM) is forwarded to the running stage and recorded;
records never stay "running". Secrets reach the child through its environment only.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from catalog.errors import StepsError
from catalog.record_file import read_json_object
from runners.config.secret_overrides import known_secrets, move_secrets
from runners.kinds import kind_for
from runners.pipeline.jobs import PIPELINE, RECORD
from runners.pipeline.lineage import write_json
from runners.pipeline.selection import beyond, select
from runners.pipeline.stage import (
    Interrupted,
    cache_hit,
    contract_ok,
    inputs_now,
    move_aside,
    nemo_rl_record,
    nemo_rl_target,
    outputs_now,
    run_child,
    stage_argv,
    stage_key,
)
from runners.secrets import redact

LOG = "stage.log"
INTERRUPTED = "interrupted"


@dataclass
class Options:
    dry_run: bool = False
    from_stage: str | None = None
    to_stage: str | None = None  # --to: this stage and what it needs, nothing after
    only_stage: str | None = None  # --only: this stage alone (what it needs completed before)
    force: list[str] = field(default_factory=list)
    nemo_rl: str | None = None
    catalog: list[str] = field(default_factory=list)
    wandb: bool = False
    out: TextIO = field(default_factory=lambda: sys.stdout)  # the one current at the call
    err: TextIO = field(default_factory=lambda: sys.stderr)  # what runs registered, as `run` shows
    profile: str | None = None  # --batch/--run PROFILE: the stages run on a cluster
    attached: bool = False  # --run: this process drives the stages (cluster_submit)
    env_file: str | None = None
    stage_args: dict[str, list[str]] = field(default_factory=dict)  # stage -> `run` flags


def _input_artifact_names(plan: Any, stage: Any, lineage: Any) -> dict[str, str]:
    from runners.artifacts.names import artifact_name

    names = {}
    for port, b in stage.inputs.items():
        if b.producer:
            prod = plan.stage(b.producer)
            names[port] = artifact_name(prod.step, b.type, lineage.is_model(b.type), prod.id)
        elif b.source.startswith("inputs."):
            names[port] = f"{b.type}-{b.source.split('.', 1)[1]}"
        else:
            names[port] = f"{b.type}-{stage.id}-{port}"
    return names


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a scheduler cancelling the job) stops the pipeline as Ctrl-C does."""

    def handler(signum: int, _frame: Any) -> None:
        raise Interrupted(signum)

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _hold_signals() -> set | None:
    """Block SIGINT and SIGTERM (they wait, pending) while a record is written, so none cuts
    the write short and leaves the record saying "running"; the mask to restore."""
    try:
        return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    except (AttributeError, ValueError, OSError):  # no signal masks here
        return None


def _release(mask: set | None) -> None:
    """Restore the mask: a signal that arrived meanwhile is delivered now."""
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _settle(record: dict, stopped_by: BaseException | None, t0: float) -> None:
    """The record's outcome when the stage ends, whatever ended it."""
    if isinstance(stopped_by, KeyboardInterrupt):  # Ctrl-C, or SIGTERM as `Interrupted`
        record.update(status=INTERRUPTED, signal=str(stopped_by) or "SIGINT")
    elif record["status"] == "running":  # an error stopped it; the CLI reports the error
        record["status"] = "failed"
    record.setdefault("finished", time.time())
    record.setdefault("duration_s", round(time.perf_counter() - t0, 3))


def _lineage(plan: Any, opts: Options) -> Any:
    if not (opts.wandb or plan.lineage.get("wandb")):
        return None
    from catalog.types import load_catalog_types
    from runners.pipeline.lineage import WandbLineage

    return WandbLineage(
        plan.name,
        plan.lineage.get("project"),
        plan.lineage.get("entity"),
        load_catalog_types(opts.catalog),
    )


def run_pipeline(plan: Any, opts: Options, env: dict | None = None, pf: Any = None) -> int:
    """Run every stage in order (with a profile: on a cluster, `cluster_submit`, which needs the
    pipeline file `pf`); 0 when all completed or were cached, else the failure's code."""
    env = dict(os.environ if env is None else env)
    from runners.rundir import REGISTRY_DIR_VAR, registry_root

    # Stages register where the pipeline was started, so `lineage NAME` there sees them.
    env[REGISTRY_DIR_VAR] = str(registry_root(None, env, Path.cwd()))
    unset = [n for n, b in plan.inputs.items() if b.value == "???"]
    if unset:
        raise StepsError(
            "E-PIPELINE-INPUT-UNSET",
            f"input '{unset[0]}' has no path (???)",
            path=str(plan.file),
            fix=f"set inputs.{unset[0]}.path in the pipeline file",
        )
    secrets = known_secrets(env, [t for s in plan.stages for t in s.overrides])
    if opts.profile and (opts.to_stage or opts.only_stage):
        raise StepsError(
            "E-CLI-OPTION",
            "--to and --only select the stages of a run on this machine",
            fix="run the stages you want here with --to/--only, or the whole pipeline with "
            "--batch/--run (--from STAGE starts it later)",
            exit_code=2,
        )
    checks = [s.id for s in plan.stages if s.dry_run]
    if opts.profile and checks and not opts.dry_run:
        raise StepsError(
            "E-CLI-OPTION",
            f"stage '{checks[0]}' is a dry run (dry_run: true): it is checked on this machine, "
            "and --batch/--run queue the stages on a cluster",
            fix=f"run the pipeline here, or drop `dry_run: true` from '{checks[0]}' to train it "
            "there (`pipeline run FILE --dry-run --batch PROFILE` checks every stage for it)",
            exit_code=2,
        )
    if opts.profile:
        from runners.pipeline.cluster_submit import run_on_cluster

        here = functools.partial(_run_stages_attached, plan, opts, env, secrets)
        return run_on_cluster(plan, pf, opts, env, secrets, select(plan, opts)[1], here)
    if opts.dry_run:
        from runners.pipeline.dry_run import dry_run

        return dry_run(plan, opts, env, secrets)
    return _run_here(plan, opts, env, secrets)


def _run_stages_attached(
    plan: Any, opts: Options, env: dict, secrets: dict[str, str], stages: list
) -> int:
    """`--run PROFILE`: each stage runs here as `run --run ITS_PROFILE`, in turn."""
    for sp in stages:
        flags = [f"--run={sp.profile}", *([f"--env-file={opts.env_file}"] if opts.env_file else [])]
        opts.stage_args[sp.stage.id] = [*flags, *(["--until-done"] if sp.chain else [])]
    return _run_here(plan, opts, env, secrets)


def _run_here(plan: Any, opts: Options, env: dict, secrets: dict[str, str]) -> int:
    """The stages one after another from this process, each a `run` child."""
    consider, forced = select(plan, opts)
    lineage = _lineage(plan, opts)
    summary: dict[str, Any] = {
        "pipeline": plan.name,
        "file": str(plan.file),
        "root": str(plan.root),
        "started": time.time(),
        "stages": {},
    }
    code, status = 1, "failed"  # also when an error stops it (e.g. E-PIPELINE-FROM)
    try:
        with _sigterm_interrupts():
            code = _run_stages(plan, opts, env, secrets, summary, consider, forced, lineage)
        status = "completed" if code == 0 else "failed"
    except KeyboardInterrupt:
        status = INTERRUPTED
        opts.out.write("pipeline interrupted: the running stage was stopped and recorded\n")
        raise
    finally:
        mask = _hold_signals()
        try:
            summary.update(
                finished=time.time(),
                status=status,
                targets={r: b.value for r, b in plan.targets.items()},
            )
            write_json(plan.root / PIPELINE, summary)
        finally:
            _release(mask)
    return code


def _run_stages(
    plan: Any,
    opts: Options,
    env: dict,
    secrets: dict[str, str],
    summary: dict,
    consider: set[str],
    forced: set[str],
    lineage: Any,
) -> int:
    out = opts.out
    target_here = nemo_rl_target(opts.nemo_rl, env)
    skipped = beyond(plan, opts)
    for stage in plan.stages:
        sdir = plan.root / stage.id
        record_path = sdir / RECORD
        previous = read_json_object(record_path)
        if stage.id in skipped:
            summary["stages"][stage.id] = {"status": "skipped", "action": "not selected"}
            out.write(f"{stage.id}: not selected (after {opts.to_stage or opts.only_stage})\n")
            continue
        if stage.id not in consider:
            if (previous or {}).get("status") != "completed":
                flag = (
                    f"--from {opts.from_stage}" if opts.from_stage else f"--only {opts.only_stage}"
                )
                raise StepsError(
                    "E-PIPELINE-FROM",
                    f"{flag}: stage '{stage.id}' before it has not completed",
                    fix=f"run the pipeline up to it first (--to {stage.id})",
                )
            summary["stages"][stage.id] = {"status": "completed", "action": "not selected"}
            out.write(f"{stage.id}: not selected (completed earlier)\n")
            continue
        overrides, secret_env = move_secrets(stage.overrides, env)
        inputs = inputs_now(stage)
        key, chash, sources, env_names, moved = None, None, {}, [], []
        if not stage.dry_run:  # a dry-run stage is a check of this machine too: never cached
            target = target_here() if kind_for(stage.runner).compiles_with_nemo_rl else None
            key, chash, sources, env_names = stage_key(stage, overrides, inputs, target)
            if stage.id not in forced and cache_hit(previous, key, stage):
                summary["stages"][stage.id] = {
                    "status": "completed",
                    "action": "cached",
                    "cache_key": key,
                }
                out.write(f"{stage.id}: cached ({key[:12]})\n")
                continue
            if previous and not (
                previous.get("status") != "completed" and previous.get("cache_key") == key
            ):
                moved = move_aside(stage, sdir)  # a different job's outputs; a failed one resumes
        outs = {p: b.value for p, b in stage.outputs.items() if not stage.dry_run}
        argv = stage_argv(stage, overrides, opts, sdir / "_runs", force=not stage.dry_run)
        record = {
            "stage": stage.id,
            "step": stage.step,
            "version": stage.version,
            "inserted": stage.inserted,
            "dry_run": stage.dry_run,
            "config": str(stage.config),
            "overrides": overrides,  # secrets replaced by ${oc.env:...} references
            "config_hash": chash,
            "config_sources": sources,
            "config_env_names": env_names,  # values are in the cache key, never in the record
            "nemo_rl": None if stage.dry_run else nemo_rl_record(target),
            "cache_key": key,
            "inputs": inputs,
            "outputs": {p: {"value": v} for p, v in outs.items()},
            "status": "running",
            "started": time.time(),
            "moved_aside": moved,
            "command": argv[1:],
            "env_from_secrets": sorted(secret_env),
        }
        t0 = time.perf_counter()
        action = "checked" if stage.dry_run else "ran"
        summary["stages"][stage.id] = {"status": "running", "action": action, "cache_key": key}
        held = None
        try:  # from the first "running" write to the outcome's: an interrupt anywhere is recorded
            write_json(record_path, redact(record, secrets))
            out.write(f"{stage.id}: {'dry run of' if stage.dry_run else 'running'} {stage.step}\n")
            rc = run_child(argv, sdir / LOG, out, {**env, **secret_env}, secrets)
            record.update(finished=time.time(), duration_s=round(time.perf_counter() - t0, 3))
            rc = _finish(record, stage, rc)  # checks the outputs' contracts: may take a while
            held = _hold_signals()  # a signal from here on waits until the outcome is written
        finally:
            held = held if held is not None else _hold_signals()
            try:
                _settle(record, sys.exc_info()[1], t0)
                summary["stages"][stage.id]["status"] = record["status"]
                write_json(record_path, redact(record, secrets))
            finally:
                _release(held)
        summary["stages"][stage.id].update(status=record["status"], exit_status=rc)
        if record["status"] != "completed":
            why = record.get("error") or f"exit {rc}"
            out.write(f"{stage.id}: FAILED ({why}); log {sdir / LOG}\n")
            out.write("fix the cause and run the pipeline again: completed stages are cached\n")
            return rc if rc > 0 else 1  # a child killed by a signal has rc < 0
        out.write(f"{stage.id}: {_done(stage, record)}\n")
        if lineage is not None:
            lineage.log_stage(stage, record, _input_artifact_names(plan, stage, lineage))
    return 0


def _done(stage: Any, record: dict) -> str:
    """What a completed stage did: ran and its outputs passed their contracts, or was checked."""
    took = f"{record['duration_s']:.1f}s"
    if stage.dry_run:
        return f"checked in {took} (dry run: preflight clean, nothing launched)"
    checked = ", ".join(f"{p} passes {o['type']}" for p, o in record["outputs"].items())
    return f"completed in {took}" + (f" ({checked})" if checked else "")


def _finish(record: dict, stage: Any, rc: int) -> int:
    """Set the record's outcome from the child's exit status and the outputs' contracts."""
    record["exit_status"] = rc
    if rc != 0:
        record["status"] = "failed"
        return rc
    if stage.dry_run:  # checked: it wrote nothing to check
        record["status"] = "completed"
        return 0
    record["outputs"] = outputs_now(stage)
    bad = [p for p, o in record["outputs"].items() if not contract_ok(o["type"], o["value"])]
    if bad:
        record["status"] = "failed"
        record["error"] = f"output(s) {', '.join(bad)} missing or failing their contract"
        return 1
    record["status"] = "completed"
    return 0
