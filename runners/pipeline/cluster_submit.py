"""`pipeline run FILE --batch|--run PROFILE`: every stage checked (`cluster_plan`), then queued to
Slurm, one job per stage `afterok` the stages it reads from (`--batch`), or driven one after
another from here (`--run`; a Ray cluster has no queue, so a Ray pipeline is `--run`). Nothing is
queued unless every check passed. A chain stage's last segment is unknown at submit, so its
dependents wait for a held gate job the chain releases when done, else cancels (docs/cluster.md,
"Pipelines on a cluster")."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from catalog.errors import StepsError
from catalog.record_file import read_json_object
from runners.pipeline.cluster_plan import StagePlan, plan_cluster
from runners.pipeline.jobs import PIPELINE, RECORD, cancel_run, live_state
from runners.pipeline.lineage import write_json
from runners.pipeline.materialize import stage_code
from runners.pipeline.stage import cache_hit, move_aside, outputs_now
from runners.secrets import redact_text

GATE = "gate"  # a chain stage's gate job: its run dir is <root>/<stage>/gate/<run>


def _previous(record: dict | None, key: str, stage: Any) -> tuple[str, str | None]:
    """What an earlier submission says now: ("cached", None), ("live", the job to wait for) when
    queued or running with this key, else ("submit", None)."""
    if not record or record.get("cache_key") != key or not record.get("run_dir"):
        return "submit", None
    if record.get("status") != "completed":
        state = live_state(record["stage"], Path(record["run_dir"]))
        if state.status in ("pending", "running"):
            return "live", record.get("gate_job_id") or state.job_id
        if state.status != "completed":
            return "submit", None
        record["status"] = "completed"
    return ("cached", None) if cache_hit(record, key, stage) else ("submit", None)


def _gate(sp: StagePlan, root: Path, after: list[str]) -> tuple[str, Path]:
    """Submit a chain stage's held gate job after what the chain waits for; (its id, run dir)."""
    import json

    from runners.launch.request import LaunchRequest
    from runners.launch.submit import submit_job
    from runners.rundir import plan_run_dir, write_run_dir

    run_dir = plan_run_dir(root / sp.stage.id, GATE)
    job_dir = f"{sp.run.job_dir}-{GATE}"
    record = json.dumps({"step": GATE, "pipeline_stage": sp.stage.id})
    write_run_dir(run_dir, {"run.json": record + "\n", "gate.sbatch": "#!/bin/bash\ntrue\n"})
    req = LaunchRequest(GATE, GATE, run_dir, job_dir, ["true"], job_dir, gpus_per_node=0,
                        batch_script=f"{job_dir}/gate.sbatch", sbatch_extra=["--hold"],
                        after=after)  # fmt: skip
    job = submit_job(run_dir, GATE, req, sp.target)
    return str(job.job_id), run_dir


def submit_pipeline(
    plan: Any,
    stages: list[StagePlan],
    forced: set[str],
    out: TextIO,
    secrets: dict[str, str],
    err: TextIO | None = None,
) -> dict:
    """Submit what must run, in order; the pipeline record (<root>/pipeline.json). A failed
    submission cancels what this call queued. `err` gets each stage's pending outputs."""
    from runners.artifacts.record import report_lines
    from runners.run import write_run_dir_for
    from runners.run.cluster import submit

    record: dict[str, Any] = {
        "pipeline": plan.name,
        "file": str(plan.file),
        "root": str(plan.root),
        "executor": stages[0].target.profile.executor if stages else "slurm",
        "submitted": time.time(),
        "status": "submitted",
        "stages": {},
    }
    waits: dict[str, str] = {}  # stage -> the job its dependents start after
    rerun: set[str] = set()
    keys: dict[str, str] = {}
    queued: list[dict] = []
    try:
        for sp in stages:
            st, sdir = sp.stage, plan.root / sp.stage.id
            key = keys[st.id] = sp.key(keys)
            before = read_json_object(sdir / RECORD)
            action, live = "submit", None
            if st.id not in forced and not set(st.after) & rerun:
                action, live = _previous(before, key, st)
            entry: dict[str, Any] = {"profile": sp.profile, "after_stages": st.after,
                                     "cache_key": key, "action": action}  # fmt: skip
            if action == "cached":
                entry["run_dir"] = (before or {}).get("run_dir")
                out.write(f"{st.id}: up to date ({key[:12]}), not submitted\n")
            elif action == "live":
                entry.update(run_dir=before["run_dir"], job_id=before.get("job_id"))
                waits[st.id] = str(live)
                out.write(f"{st.id}: already queued or running (job {live}), waited for\n")
            else:
                rerun.add(st.id)
                _refuse_busy(before, st.id, sdir)
                after = [waits[a] for a in st.after if a in waits]
                moved = move_aside(st, sdir) if before else []
                gate = gate_dir = None
                if sp.chain:
                    gate, gate_dir = _gate(sp, plan.root, after)
                    queued.append({"run_dir": str(gate_dir)})
                write_run_dir_for(sp.run)
                stage_code(sp.run)  # its inputs derived in the job (runners.pipeline.materialize)
                job, pending = submit(sp.run, sp.target, after=after, gate=gate)
                for line in report_lines(pending):
                    print(line, file=err or sys.stderr, flush=True)
                waits[st.id] = gate or str(job.job_id)
                entry.update(run_dir=str(sp.run.run_dir), job_id=job.job_id, after=after,
                             gate_job_id=gate, gate_run_dir=str(gate_dir) if gate_dir else None,
                             log=job.log_path)  # fmt: skip
                queued.append(entry)
                write_json(sdir / RECORD, _stage_record(sp, entry, moved))
                deps = f" after {', '.join(after)}" if after else ""
                chain = f"; its dependents wait for gate job {gate}" if gate else ""
                out.write(f"{st.id}: submitted {sp.run.step_id} job {job.job_id}{deps} "
                          f"[{sp.profile}]{chain}\n")  # fmt: skip
            record["stages"][st.id] = entry
    except BaseException:
        _cancel_queued(queued, out)
        record["status"] = "submit failed"
        write_json(plan.root / PIPELINE, record)
        raise
    write_json(plan.root / PIPELINE, record)
    return record


def _refuse_busy(before: dict | None, stage_id: str, sdir: Path) -> None:
    """E-PIPELINE-BUSY when the stage is to run again while its previous job is still queued or
    running (both would write its outputs)."""
    if not before or before.get("status") == "completed" or not before.get("run_dir"):
        return
    state = live_state(stage_id, Path(before["run_dir"]))
    if state.status in ("pending", "running"):
        raise StepsError(
            "E-PIPELINE-BUSY",
            f"stage '{stage_id}' is to run again (forced, changed, or after a stage that runs "
            f"again) while its previous job {state.job_id} is still {state.status}: both jobs "
            "would write its outputs",
            path=str(sdir / RECORD),
            fix=f"wait for job {state.job_id} to end, or cancel it first (`python -m steps "
            f"cancel {sdir}`), then run the pipeline again",
            exit_code=2,
        )


def _stage_record(sp: StagePlan, entry: dict, moved: list[str]) -> dict:
    """`<root>/<stage>/record.json`: what was submitted, for the next run's up-to-date check."""
    return {
        "stage": sp.stage.id,
        "step": sp.stage.step,
        "version": sp.stage.version,
        "executor": sp.target.profile.executor,
        "status": "submitted",
        "submitted": time.time(),
        "outputs": outputs_now(sp.stage),
        "moved_aside": moved,
        **entry,
    }


def _cancel_queued(queued: list[dict], out: TextIO) -> None:
    """Cancel the jobs this call queued (a pipeline is queued whole or not at all)."""
    for entry in reversed(queued):
        try:
            found, said = cancel_run(entry["run_dir"])
            out.write(f"cancelled {found}: {said}\n")
        except (StepsError, OSError) as exc:
            out.write(f"could not cancel {entry['run_dir']}: {exc}\n")


def _report(stages: list, out: Any, secrets: dict[str, str]) -> int:
    """Print each stage's findings; the exit code when any stage has an error (else 0)."""
    worst = 0
    for i, sp in enumerate(stages, 1):
        st = sp.stage
        out.write(f"{i}. {st.id} ({st.step}) [{sp.profile}]{' until done' if sp.chain else ''}\n")
        for f in sp.findings:
            out.write(redact_text(f.render(indent="   "), secrets) + "\n")
        for p, b in st.inputs.items():
            if b.producer:
                out.write(f"   input {p} <- {b.source}: written by stage {b.producer} first, "
                          "judged when this stage starts\n")  # fmt: skip
        if not sp.ok:
            worst = max(worst, sp.code or 1)
        elif not any(f.is_error for f in sp.findings):
            out.write("   checks clean\n")
    return worst


def run_on_cluster(
    plan: Any,
    pf: Any,
    opts: Any,
    env: dict,
    secrets: dict[str, str],
    forced: set[str],
    here: Callable[[list], int],
) -> int:
    """0 when every stage was queued, ran (`here(stages)` drives them), or checked clean (dry run);
    1 when a check failed (nothing queued); else the failing stage's code. `forced`: stages
    submitted even when up to date."""
    out = opts.out
    stages = plan_cluster(plan, pf, opts, env)
    queued = all("sbatch" in sp.target.traits.has for sp in stages)  # stages wait in a queue
    if not opts.attached and not queued:
        raise StepsError(
            "E-PIPELINE-PROFILE",
            "a pipeline on Ray is driven by this process: stages wait for each other here, "
            "not in a queue",
            path=str(pf.path),
            fix="use `pipeline run FILE --run PROFILE` (or Slurm profiles for every stage)",
            exit_code=2,
        )
    worst = _report(stages, out, secrets)
    if worst:
        out.write(f"checks failed: nothing submitted ({len(stages)} stages)\n")
        return worst
    if opts.dry_run:
        out.write(f"dry run: clean ({len(stages)} stages), nothing submitted\n")
        return 0
    if opts.attached:
        return here(stages)
    record = submit_pipeline(plan, stages, forced, out, secrets, err=opts.err)
    queued = sum(1 for e in record["stages"].values() if e["action"] == "submit")
    out.write(
        f"pipeline {plan.name}: {queued} of {len(stages)} stages queued\n"
        f"  status: python -m steps status {plan.root}\n"
        f"  logs:   python -m steps logs {plan.root}\n"
        f"  cancel: python -m steps cancel {plan.root}\n"
    )
    return 0
