"""Watching a launched run from the outside: its progress and, when it ended badly, why.

What a job leaves is read where it lies, in one remote_probe `run` per question (the scheduler's
facts, the driver log's tail, the latest `step_N`, the newest TensorBoard tail); `diagnose` greps
every log for the failure kinds' keywords, so only matching lines travel. The parsing is
runners/monitor's.
"""

from __future__ import annotations

import base64
import io
import posixpath
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.config_values import dotted_get
from runners.launch.backends import traits
from runners.launch.profiles.values import slurm_seconds
from runners.launch.records import job_of, shell_for
from runners.launch.request import TERMINAL
from runners.launch.slurm.backend import DRIVER_LOG
from runners.launch.slurm.state import exit_code_of
from runners.monitor.logscan import grep_script, parse_grep, python_prefilter
from runners.monitor.progress import Progress, combine, parse_log_tail
from runners.monitor.tfevents import read_scalars
from runners.rundir import JobRecord

if TYPE_CHECKING:
    from runners.monitor.classify import Diagnosis, LogClassifier

LOG_TAIL = 1 << 20  # bytes of the driver log read for progress (hundreds of steps)
TB_TAIL = 64 << 10  # the latest few hundred scalars: enough for the last steps
STALL_FACTOR = 5.0


@dataclass
class JobFacts:
    """What the scheduler says of one job."""

    state: str | None
    exit_code: int | None
    elapsed_s: float | None
    nodes: int | None
    source: str


def _seconds(text: str) -> float | None:
    """sacct ElapsedRaw (seconds) or scontrol RunTime ([D-]HH:MM:SS)."""
    found = int(text) if text.isdigit() else slurm_seconds(text)
    return None if found is None else float(found)


def _facts_request(jobs: list[JobRecord]) -> dict[str, list[str]] | None:
    """scontrol for each job that may be live (sacct lags a started job by the slurmdbd round
    trip), then one sacct for all (it keeps jobs after MinJobAge)."""
    slurm_jobs = [j for j in jobs if "sbatch" in traits(j.executor).has]
    if not slurm_jobs:
        return None
    return {
        "live": [str(j.job_id) for j in slurm_jobs if j.state not in TERMINAL],
        "all": [str(j.job_id) for j in slurm_jobs],
    }


def _parse_facts(jobs: list[JobRecord], rows: list[dict[str, Any]]) -> dict[str, JobFacts]:
    """One JobFacts a job: scontrol's wins; a later sacct record (a requeue's) replaces one."""
    ended = {str(j.job_id) for j in jobs if j.state in TERMINAL}
    out: dict[str, JobFacts] = {}
    for row in rows:
        source, jid = str(row.get("source")), str(row.get("id") or "").split(".")[0]
        state, code = (str(row.get("state") or "").split() or [""])[0], str(row.get("code") or "")
        elapsed, nodes = str(row.get("elapsed") or ""), str(row.get("nodes") or "")
        if not state or (jid in out and out[jid].source == "scontrol"):
            continue
        if jid in ended and state not in TERMINAL:
            continue  # sacct lagging behind an end slurmctld already reported
        out[jid] = JobFacts(
            state, exit_code_of(state, code), _seconds(elapsed),
            int(nodes) if nodes.isdigit() else None, source,
        )  # fmt: skip
    return out


def slurm_facts(jobs: list[JobRecord]) -> dict[str, JobFacts]:
    """The scheduler's facts for every Slurm job of a run (same host), in one round trip."""
    request = _facts_request(jobs)
    if request is None:
        return {}
    got = shell_for(jobs[-1]).ask(
        {"op": "run", "facts": request}, what="asking Slurm for job facts"
    )
    return _parse_facts(jobs, got.get("facts") or [])


def _config(run_dir: Path) -> dict:
    """The run's resolved config (resolved.yaml, else config.yaml), {} when unreadable."""
    import yaml

    from catalog.yamlfile import read_data

    for name in ("resolved.yaml", "config.yaml"):
        try:
            data = read_data(run_dir / name)
        except (OSError, ValueError, yaml.YAMLError):
            continue
        if isinstance(data, dict):
            return data
    return {}


def _job_path(value: object, data: dict) -> str | None:
    """A config path as the job sees it (relative ones are under the job's cwd)."""
    if not isinstance(value, str) or not value or "${" in value:
        return None
    if posixpath.isabs(value):
        return value
    cwd = data.get("command_cwd") or ""
    return posixpath.join(cwd, value) if cwd else None


def run_jobs(data: dict, job: JobRecord) -> list[JobRecord]:
    """A run's jobs, oldest first: a chain's segments ending with `job` (a segment lacking a
    field takes the job's), else `[job]`."""
    chain = data["chain"] if isinstance(data.get("chain"), dict) else {}
    recorded = data.get("segments") or chain.get("segments") or []  # runners/chain's record
    segments = [s for s in recorded if isinstance(s, dict) and s.get("job_id")]
    done = [
        JobRecord.model_validate({**job.dump(), **s})
        for s in segments
        if str(s["job_id"]) != str(job.job_id)
    ]
    return [*done, job]


def run_progress(
    run_dir: Path,
    data: dict,
    jobs: list[JobRecord] | None = None,
    stall_factor: float = STALL_FACTOR,
    facts: dict[str, JobFacts] | None = None,
) -> Progress:
    """Progress of a run whose last job is `jobs[-1]`; GPU-hours add up every job's."""
    jobs = jobs or [job_of(data)]
    job = jobs[-1]
    config = _config(run_dir)
    log = job.log_path if traits(job.executor).log_is_file else None
    ckpt = _job_path(dotted_get(config, "checkpointing.checkpoint_dir"), data)
    tb = None
    if dotted_get(config, "logger.tensorboard_enabled") is True:
        tb = _job_path(dotted_get(config, "logger.log_dir"), data)
    request: dict[str, Any] = {
        "op": "run", "facts": _facts_request(jobs) if facts is None else None
    }  # fmt: skip
    request["progress"] = {"log": log, "ckpt": ckpt, "tb": tb, "log_tail": LOG_TAIL,
                           "tb_tail": TB_TAIL}  # fmt: skip
    # One round trip for all of it: the scheduler's facts, the log's tail, checkpoints, TB.
    got = shell_for(job).ask(request, what="reading the run's log, checkpoints and Slurm facts")
    facts = _parse_facts(jobs, got.get("facts") or []) if facts is None else facts
    seen = got.get("progress") or {}
    gpus = dotted_get(config, "cluster.gpus_per_node")
    hours = 0.0
    for j in jobs:
        f = facts.get(str(j.job_id))
        if f is None or f.elapsed_s is None or not isinstance(gpus, int):
            continue
        hours += (f.nodes or 1) * gpus * f.elapsed_s / 3600
    now = float(seen.get("now") or time.time())
    quiet = None
    log_progress = None
    if "log_size" in seen:
        quiet = now - float(seen["log_mtime"])
        text = base64.b64decode(seen.get("log_tail", "")).decode("utf-8", "replace")
        log_progress = parse_log_tail(text, partial=int(seen["log_size"]) > LOG_TAIL)
    checkpoint = seen.get("checkpoint")
    tb_tail = base64.b64decode(seen["tb_tail"]) if "tb_tail" in seen else b""
    scalars = read_scalars(tb_tail, from_tail=True) if tb_tail else []
    if scalars:
        quiet = now - max(s.wall_time for s in scalars)
    state = facts[str(job.job_id)].state if str(job.job_id) in facts else job.state
    return combine(
        log_progress, checkpoint if isinstance(checkpoint, dict) else None, scalars, config,
        state=state, gpu_hours=round(hours, 2) if facts else None, quiet_seconds=quiet,
        stall_factor=stall_factor,
    )  # fmt: skip


def log_files(job: JobRecord) -> list[str]:
    """Every log of a job: ray.sub's driver, head and worker logs, then the batch output."""
    files = []
    log = job.log_path or ""
    if log.endswith("/" + DRIVER_LOG):
        logs = log.rsplit("/", 1)[0]
        files += [log, f"{logs}/ray-head.log", f"{logs}/ray-worker-*.log"]
    out = job.batch_output or log
    if out and out not in files:
        files.append(out)
    return files


def scan_logs(job: JobRecord, classifier: LogClassifier) -> None:
    """Feed every candidate line of the job's logs to `classifier`, streaming."""
    if not traits(job.executor).log_is_file:  # the cluster's service keeps it: no file
        where, text = traits(job.executor).kept_log(job)
        for number, line in python_prefilter(io.BytesIO(text.encode("utf-8"))):
            classifier.feed(where, number, line)
        return
    files = log_files(job)
    if job.host is None and shutil.which("grep") is None:
        import glob

        for pattern in files:
            for path in sorted(glob.glob(pattern)):
                with open(path, "rb") as fh:
                    for number, line in python_prefilter(fh):
                        classifier.feed(path, number, line)
        return
    proc = shell_for(job).popen(grep_script(files))
    assert proc.stdout is not None
    try:
        for path, number, line in parse_grep(proc.stdout):
            classifier.feed(path, number, line)
    finally:
        proc.stdout.close()
        proc.wait()


def diagnose_run(run_dir: Path, data: dict, job: JobRecord | None = None) -> Diagnosis:
    """Why the run's job (or `job`, a chain's segment) ended, as catalog/failures.py names it."""
    from runners.monitor.classify import LogClassifier, diagnose

    job = job or job_of(data)
    state, code, source = job.state, job.exit_code, "run.json"
    facts = slurm_facts([job])
    if str(job.job_id) in facts:
        f = facts[str(job.job_id)]
        state, code, source = f.state, f.exit_code, f.source
    elif "sbatch" not in (backend := traits(job.executor)).has:
        source = f"{backend.title} job status"
    classifier = LogClassifier()
    scan_logs(job, classifier)
    result = diagnose(classifier, state, code, source)
    if state in TERMINAL or state in (None, "RUNNING"):
        result.step = run_progress(run_dir, data, [job], facts=facts).step
    return result
