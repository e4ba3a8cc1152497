"""A chain seen from the submitting machine: its record read back, its current job, cancel.

`refresh_chain` reads the job dir's record (over ssh, one `bash -s`) into the local run.json and
points `job` at the current segment; a Ray chain's record is already local. `cancel_chain`
leaves a mark no segment starts past, then cancels every job of the chain by its name.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from pathlib import Path
from typing import Any

from catalog.errors import StepsError
from runners.chain.record import (
    CANCEL_MARK,
    CHAIN_SECRETS,
    ChainRecord,
    Failure,
    Segment,
    sibling_chains,
)
from runners.launch.job_secrets import SECRETS_FILE
from runners.launch.records import backend_for_job, job_of, shell_for
from runners.launch.request import TERMINAL
from runners.launch.shell import Shell
from runners.launch.slurm.backend import DRIVER_LOG
from runners.rundir import JobRecord, update_record

_MARKED = "@@steps-chain-cancelled@@"
UNDECIDED_END = TERMINAL - {"COMPLETED", "NOT_SUBMITTED"}  # a queued job's end before `begin`


def _segment_job(job: JobRecord, job_id: str, restart: int, **ended: Any) -> JobRecord:
    """The chain's job record for one segment (its state and exit code once it `ended`)."""
    logs = f"{job_id}-{restart}-logs" if restart else f"{job_id}-logs"
    return job.model_copy(
        update={
            "job_id": job_id,
            "log_path": f"{job.job_dir}/{logs}/{DRIVER_LOG}",
            "batch_output": f"{job.job_dir}/slurm-{job_id}.out",
            "state": "PENDING",
            "exit_code": None,
            **ended,
        }
    )


def current_job(job: JobRecord, chain: ChainRecord) -> JobRecord:
    """The job of the segment that runs now, else the one queued, else the last one."""
    last = chain.segments[-1] if chain.segments else None
    if last is not None and not last.ended:
        return _segment_job(job, last.job_id, last.restart)
    if chain.next_job_id and chain.state in ("queued", "running"):
        return _segment_job(job, chain.next_job_id, 0)
    if last is not None:
        return _segment_job(
            job, last.job_id, last.restart, state=last.state, exit_code=last.exit_code
        )
    return job


def refresh_chain(run_dir: Path, data: dict, env: dict[str, str] | None = None) -> dict:
    """run.json with the chain as its segments recorded it and `job` = the current segment."""
    job = job_of(data, run_dir)
    local = ChainRecord.model_validate(data["chain"])
    if local.attached:  # the driver keeps the record here; `job` is its segment
        if job.job_id and job.state not in TERMINAL:
            with contextlib.suppress(StepsError):
                job = backend_for_job(job, env).refresh(job)
        return update_record(run_dir, job=job.dump())
    remote = f"{job.job_dir}/run.json"
    mark = f"{job.job_dir}/{CANCEL_MARK}"
    script = (
        f"cat {shlex.quote(remote)}\nif [ -e {shlex.quote(mark)} ]; then echo; echo {_MARKED}; fi\n"
    )
    proc = shell_for(job, env).run(script, "reading the chain record")
    text, _, _ = proc.stdout.partition(_MARKED)
    try:
        chain = ChainRecord.model_validate(json.loads(text)["chain"])
    except (ValueError, KeyError, TypeError):
        chain = local  # not readable now (a segment is rewriting it, or no access): keep ours
    if _MARKED in proc.stdout or local.state == "cancelled":
        chain.state = "cancelled"
        chain.reason = chain.reason or "cancelled by `python -m steps cancel`"
    now = current_job(job, chain)
    if now.state not in TERMINAL:
        with contextlib.suppress(StepsError):  # no answer now: the recorded state stands
            now = backend_for_job(now, env).refresh(now)
    died_undecided(chain, now)
    return update_record(run_dir, chain=chain.model_dump(mode="json"), job=now.dump())


def died_undecided(chain: ChainRecord, now: JobRecord) -> None:
    """The chain's queued job ended before its `begin` ran, so nothing decides for it: the chain
    stopped there, shown as that segment failed (in the local run.json only)."""
    if chain.state not in ("queued", "running") or now.state not in UNDECIDED_END:
        return
    if any(seg.job_id == str(now.job_id) for seg in chain.segments):  # it decided: recorded
        return
    code = "" if now.exit_code is None else f" (exit code {now.exit_code})"
    why = f"ended {now.state}{code} before its decision step ran: nothing of it trained"
    last = chain.segments[-1] if chain.segments else None
    steps = (last.steps_after or last.steps_before) if last else 0
    seg = Segment(n=len(chain.segments) + 1, job_id=str(now.job_id), steps_before=steps)
    seg.close(
        now.state, now.exit_code, steps, Failure(kind="unknown", retryable=False, evidence=why)
    )
    chain.segments.append(seg)
    chain.state, chain.next_job_id = "stopped", None
    chain.reason = (
        f"segment {seg.n} (job {now.job_id}) {why}; `python -m steps logs` shows its batch output"
    )


def cancel_chain(data: dict, run_dir: Path, env: dict[str, str] | None = None) -> str:
    """Mark the chain cancelled (no segment starts past the mark), then cancel its jobs."""
    job = job_of(data, run_dir)
    chain = ChainRecord.model_validate(data["chain"])
    if chain.attached:
        (run_dir / CANCEL_MARK).touch()
        said = backend_for_job(job, env).cancel(job) if job.job_id else "no segment runs"
        return f"chain {chain.job_name} cancelled: no further segment starts; {said}"
    mark = shlex.quote(f"{job.job_dir}/{CANCEL_MARK}")
    secrets = " ".join(shlex.quote(f"{job.job_dir}/{n}") for n in (CHAIN_SECRETS, SECRETS_FILE))
    script = f"touch {mark}\nscancel --name={shlex.quote(chain.job_name)}\nrm -f {secrets}\n"
    proc = shell_for(job, env).run(script, "cancelling the chain (scancel)")
    if proc.returncode != 0:
        raise StepsError(
            "E-CANCEL",
            f"cancelling chain {chain.job_name} failed: {proc.stderr.strip()}",
            fix="check with `python -m steps status RUN`, or `scancel --name` it yourself",
            exit_code=2,
        )
    return f"cancel requested for every segment of chain {chain.job_name} (Slurm job name)"


def _host(data: dict) -> str | None:
    """Where another run's job ran, as its record says (only compared, never used to ask)."""
    try:
        return job_of(data).host if data.get("job") is not None else None
    except StepsError:
        return None


def refuse_if_live(run_dir: Path, chain: ChainRecord, profile: Any, env=None) -> None:
    """E-CHAIN-BUSY when an earlier Slurm chain of this step on the same checkpoint dir still has
    a job in the queue (one `squeue`; a queue that cannot be read does not stop the submit)."""
    host = getattr(profile, "host", None)
    names: dict[str, Path] = {}
    for other, data, earlier in sibling_chains(run_dir, chain):
        if earlier.state not in ("done", "stopped", "cancelled") and _host(data) == host:
            names[earlier.job_name] = other
    if not names:
        return
    script = f"squeue -h --name={shlex.quote(','.join(names))} -o %j\n"
    shell = Shell(host, list(getattr(profile, "ssh_options", [])), env)
    proc = shell.run(script, "looking for earlier chains' jobs in the queue")
    live = [names[n] for n in proc.stdout.split() if n in names]
    if proc.returncode == 0 and live:
        raise StepsError(
            "E-CHAIN-BUSY",
            f"the chain of {live[0]} still has a job in the queue, training "
            f"{chain.checkpoint_dir}: a second chain would train the same checkpoints beside it",
            fix=f"let it go on (`python -m steps status {live[0]}`), or cancel it first "
            f"(`python -m steps cancel {live[0]}`); NeMo-RL resumes from its latest step",
            exit_code=2,
        )
