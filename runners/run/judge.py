"""NeMo-RL's own judge as a short CPU job in the user's image, before the GPU job (issue 38).

A NeMo-RL step sent to a cluster with a container first submits a CPU-only job (`-judge`) that
runs `upstream-judge` (runners/preflight/judge_in_job.py) in the image, so a missing package or
a config that NeMo-RL refuses fails in minutes instead of after the GPU queue. The backend says
how the GPU job waits (`after_judge`): Slurm holds it with afterok; on Ray this process waits.
Exit 1 (an error found) holds the GPU job back; a judge that could not finish lets it go ahead.
run.json's `judge` holds its record and, once it ended, its `report` read from its log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.errors import Finding, StepsError
from runners.launch.request import NOT_SUBMITTED, TERMINAL, LaunchRequest
from runners.rundir import JobRecord, update_record

if TYPE_CHECKING:
    from runners.launch.target import ClusterTarget
    from runners.run.plan import RunPlan

SUFFIX = "-judge"
MARGIN_S = 600  # on top of the judge's own bound: the image started, our code imported
LOG_TAIL = 256 << 10  # the end of its log holds the verdict line
VERDICT = (
    '"$@"; code=$?; if [ "$code" -ne 0 ] && [ "$code" -ne 1 ]; then echo "steps: the upstream '
    'judge did not finish (exit $code); the GPU job goes ahead" >&2; fi; [ "$code" -ne 1 ]'
)


def limit_s(env: dict[str, str]) -> float:
    """How long the judge's job may take in all (the image's start included)."""
    from runners.launch.local import PROBE_TIMEOUT_S
    from runners.preflight.upstream_judge import judge_seconds

    return judge_seconds(env) + PROBE_TIMEOUT_S + MARGIN_S


def plan_judge(
    plan: RunPlan, target: ClusterTarget, wanted: bool, launcher: str
) -> tuple[LaunchRequest | None, str | None]:
    """The judge's launch request, or None with why (None, None: not a NeMo-RL step)."""
    req = plan.request
    if req is None or not plan.kind.compiles_with_nemo_rl:
        return None, None
    if not wanted:
        return None, "skipped (--no-upstream-judge)"
    if target.backend.judge_image is None:
        return None, "none: the profile names no container_image to judge in"
    from runners.preflight.upstream_judge import judge_seconds

    if judge_seconds({**target.env, **req.env}) == 0:  # the profile's env, else this one
        return None, "skipped (STEPS_UPSTREAM_JUDGE_SECONDS=0 in the profile's env)"
    from runners.launch.job_code import steps_command

    steps = steps_command(req.job_dir, target.profile)
    argv = [*steps, "upstream-judge", req.job_dir, "--launcher", launcher]
    from runners.launch.profiles.values import slurm_seconds

    limit, own = limit_s(req.env), getattr(target.profile, "time", None)  # Slurm's --time
    cap = slurm_seconds(own) if own else None  # a judge never asks for more than the GPU job
    minutes = math.ceil(min(limit, cap or limit) / 60)
    return LaunchRequest(
        step_id=req.step_id,
        runner=req.runner,
        run_dir=req.run_dir,
        job_dir=req.job_dir,
        command=["bash", "-c", VERDICT, "steps-upstream-judge", *argv],
        cwd=req.cwd,
        env=dict(req.env),
        nodes=1,
        gpus_per_node=0,
        account=req.account,
        partition=req.partition,
        name_suffix=SUFFIX,
        time_limit=f"{minutes // 60:02d}:{minutes % 60:02d}:00",
    ), None


def describe(judge: LaunchRequest | None, note: str | None, target: ClusterTarget) -> dict:
    """What a dry run says of the judge: its submission, image and gate (or why there is none)."""
    if judge is None:
        return {"skipped": note} if note else {}
    backend = target.backend
    return {**backend.describe(judge), "image": backend.judge_image, "gate": backend.judge_gate}


def submit_judge(plan: RunPlan, target: ClusterTarget, after: list[str]) -> JobRecord | None:
    """Submit the judge after `after` (a pipeline's earlier stages), wait as the backend does;
    its record. A judge refused for certain leaves no run dir and raises E-SUBMIT."""
    if plan.judge is None:
        return None
    from runners.launch.job_code import stage

    stage(plan.run_dir)  # our code, which the judge runs in the image
    plan.judge.after = list(after)
    backend = target.backend
    job = backend.job_record(plan.judge)
    update_record(plan.run_dir, judge=job.dump())
    try:
        backend.submit(plan.judge, job)
    finally:
        if job.state == NOT_SUBMITTED:
            target.settle(plan.run_dir, plan.step_id, job)
        else:
            update_record(plan.run_dir, judge=job.dump())
    return job


def gate(plan: RunPlan, target: ClusterTarget, judge: JobRecord, after: list[str]) -> list[str]:
    """The jobs the GPU job starts after: `after` and what the backend holds it on."""
    held = target.backend.after_judge(judge, limit_s(plan.judge.env if plan.judge else {}))
    if judge.state in TERMINAL:
        settled(plan.run_dir, judge, target.backend)
    return [*after, *held]


def refused(judge: JobRecord | None) -> bool:
    """The judge ended and did not pass: the GPU job must not start."""
    return judge is not None and judge.state in TERMINAL and judge.exit_code != 0


def settled(run_dir: Path, judge: JobRecord, backend: Any) -> dict:
    """run.json's `judge` with its report, read once from the log of a judge that ended."""
    from runners.preflight.judge_in_job import read_report

    log = backend.log_tail(judge, LOG_TAIL)
    report = read_report(log) if log else None
    doc = {**judge.dump(), "report": report or {"ok": None, "findings": []}}
    update_record(run_dir, judge=doc)
    return doc


@dataclass
class Verdict:
    """The judge of a run as `status` and `diagnose` show it."""

    job: JobRecord
    findings: list[Finding] = field(default_factory=list)
    judged: bool = False  # its log held a verdict

    @property
    def refused(self) -> bool:
        return refused(self.job)

    def line(self) -> str:
        """One line: the judge's job, its state, what that meant for the GPU job."""
        job, code = self.job, self.job.exit_code
        head = f"upstream judge: {job.executor} job {job.job_id or '-'} {job.state}"
        head += "" if code is None else f", exit code {code}"
        if job.state not in TERMINAL:
            return head + " (the GPU job waits for it)"
        if self.refused:
            said = "NeMo-RL in the image refused the config" if self.judged else "it failed"
            return f"{head}: {said}; the GPU job never started"
        if not self.judged:
            return f"{head}: no verdict in its log (it did not finish); the GPU job went ahead"
        return f"{head}: passed"

    def to_dict(self) -> dict:
        return {**self.job.dump(), "findings": [f.to_dict() for f in self.findings]}


def verdict(run_dir: Path, data: dict) -> Verdict | None:
    """The run's judge, if any: refreshed while it runs, its report read once it ended."""
    doc = data.get("judge")
    if not isinstance(doc, dict):
        return None
    job = JobRecord.model_validate({k: v for k, v in doc.items() if k != "report"})
    if "report" not in doc and job.job_id:
        from runners.launch.records import backend_for_job

        backend = backend_for_job(job)
        job = backend.refresh(job) if job.state not in TERMINAL else job
        if job.state in TERMINAL:
            try:
                doc = settled(run_dir, job, backend)
            except StepsError:  # its log cannot be read now: asked again next time
                doc = job.dump()
    report = doc.get("report")
    report = report if isinstance(report, dict) else {}
    names = ("code", "message", "path", "line", "fix", "severity", "key")
    found = [f for f in report.get("findings") or [] if isinstance(f, dict)]
    findings = [Finding(**{k: f[k] for k in names if k in f}) for f in found]
    return Verdict(job, findings, judged=report.get("ok") is not None)
