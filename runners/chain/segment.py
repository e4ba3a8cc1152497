"""Inside a chain's Slurm job: decide before NeMo-RL starts and after it exits.

`begin` runs first in every segment (a batch script on the allocation's first node, where the
Slurm commands are): it closes the record of a segment that was killed before its own `end`
ran (time limit, preemption, requeue), reads the latest complete checkpoint, and either stops
the chain (nothing of NeMo-RL starts) or records this segment and queues its successor behind
it (`--dependency=afterany:<this job>`), so the chain goes on when this job is killed. `end`
runs after ray.sub exits: it records what was trained and how it ended, and cancels the queued
successor when the chain is done or must stop. No process of ours waits anywhere else.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Mapping
from pathlib import Path

from catalog.errors import StepsError
from runners.chain.decide import Verdict, judge
from runners.chain.failures import classify, segment_logs
from runners.chain.progress import latest_checkpoint
from runners.chain.record import (
    CANCEL_MARK,
    CHAIN_SECRETS,
    ChainRecord,
    Segment,
    now_utc,
    read_chain,
    write_chain,
)
from runners.launch.backends import backend_for_job
from runners.launch.job_secrets import SECRETS_FILE
from runners.launch.remote_probe import show_job
from runners.launch.request import TERMINAL
from runners.launch.shell import Shell

RUN, SKIP = "run", "skip"
KILLED = {"PREEMPTED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "DEADLINE"}
REQUEUING = {"REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "PENDING"}
SETTLE_POLLS = 60  # x 0.5 s: how long a killed segment's job may stay COMPLETING
REQUEUE_RECHECK_S = 60  # a successor that found its predecessor requeued looks again this late
# What sbatch inside a job must not inherit: the running job's own SLURM_* variables.
_CLEAN_ENV = (
    'for n in $(compgen -e); do case $n in SLURM_CONF) ;; SLURM_*) unset "$n" ;; esac; done\n'
)


def _whoami(env: Mapping[str, str]) -> tuple[str, int]:
    job_id = env.get("SLURM_JOB_ID")
    if not job_id:
        raise StepsError(
            "E-CHAIN-SEGMENT",
            "chain-step runs inside a chain's Slurm job (SLURM_JOB_ID is not set)",
            fix="submit the run with `python -m steps run ... --batch PROFILE --until-done`",
            exit_code=2,
        )
    return job_id, int(env.get("SLURM_RESTART_COUNT") or 0)


def _slurm_end(seg: Segment, job_dir: Path) -> tuple[str, int | None]:
    """A segment job's Slurm state (sacct, else scontrol, else its exit line), once it has left
    COMPLETING: a job killed for a requeue passes through it on its way back to PENDING."""
    job = {
        "executor": "slurm",
        "job_id": seg.job_id,
        "log_path": str(job_dir / f"slurm-{seg.job_id}.out"),
        "batch_output": str(job_dir / f"slurm-{seg.job_id}.out"),
        "state": "RUNNING",
    }
    backend = backend_for_job(job)
    for _ in range(SETTLE_POLLS):
        new = backend.refresh(dict(job))
        if new.get("state") != "COMPLETING":
            break
        time.sleep(0.5)
    if _restarts(seg.job_id) > seg.restart:  # requeued: whatever state it showed on the way
        return "REQUEUED", None
    return new.get("state") or "UNKNOWN", new.get("exit_code")


def _controller_view(job_id: str) -> tuple[str | None, int]:
    """(JobState, Restarts) as slurmctld sees a job now (None, 0 once it left the controller,
    or when it does not answer within the Slurm-call bound)."""
    record = show_job(job_id)[0] or {}
    restarts = record.get("Restarts", "")
    return record.get("JobState") or None, int(restarts) if restarts.isdigit() else 0


def _restarts(job_id: str) -> int:
    """How often Slurm restarted a job (scontrol's Restarts=; 0 once it left the controller)."""
    return _controller_view(job_id)[1]


def _close(
    seg: Segment, chain: ChainRecord, job_dir: Path, state: str, code: int | None, steps: int
):
    """Fill in a segment that never reached its own `end` (killed, or requeued)."""
    logs = segment_logs(chain.log_dir, str(job_dir), seg.job_id, seg.restart)
    seg.close(state, code, steps, classify(state, code, logs))


def _submit_next(chain: ChainRecord, after: str, delay: int = 0) -> str:
    """sbatch the next segment behind job `after`, with this job's environment (secrets too)."""
    argv = [*chain.sbatch[:2], f"--dependency=afterany:{after}", "--kill-on-invalid-dep=yes"]
    if delay:
        argv.append(f"--begin=now+{delay}")
    argv += chain.sbatch[2:]
    script = f"{_CLEAN_ENV}cd {shlex.quote(chain.submit_cwd)}\nexec {shlex.join(argv)}\n"
    proc = Shell().run(script, "sbatch of the next segment")
    job_id = proc.stdout.strip().split(";")[0]
    if proc.returncode != 0 or not job_id.isdigit():
        raise StepsError(
            "E-CHAIN-SUBMIT",
            f"sbatch of the next segment failed: {(proc.stderr or proc.stdout).strip()}",
            fix="check the partition's limits; the chain goes on once a segment is queued "
            "again (`python -m steps status RUN`)",
            exit_code=2,
        )
    return job_id


def _forget_secrets(job_dir: Path) -> None:
    """The chain ended: its copy of the secrets file (and an unread one) goes."""
    for name in (CHAIN_SECRETS, SECRETS_FILE):
        (job_dir / name).unlink(missing_ok=True)


def _cancel(job_id: str | None, me: str) -> None:
    if job_id and job_id != me:
        Shell().run(f"scancel {shlex.quote(job_id)}\n", "scancel of the queued segment")


def begin(job_dir: Path, env: Mapping[str, str] | None = None) -> str:
    """RUN when this segment may train; SKIP (after stopping the chain) when it may not."""
    env = os.environ if env is None else env
    me = _whoami(env)
    data, chain = read_chain(job_dir)
    ckpt = latest_checkpoint(Path(chain.checkpoint_dir))
    steps = ckpt.total_steps if ckpt else 0
    for seg in chain.segments:
        if seg.ended:
            continue
        if seg.job_id == me[0]:  # the same job again: `scontrol requeue`, a node failure
            _close(seg, chain, job_dir, "REQUEUED", None, steps)
            continue
        state, code = _slurm_end(seg, job_dir)
        if state not in TERMINAL:  # requeued: it runs again, and it must run alone
            # Slurm may count a requeued job as ended for a new dependency: look again later.
            chain.next_job_id = _submit_next(chain, seg.job_id, delay=REQUEUE_RECHECK_S)
            write_chain(job_dir, data, chain)
            return f"{SKIP} (segment {seg.n}, job {seg.job_id}, runs again: queued behind it)"
        _close(seg, chain, job_dir, state, code, steps)
    if _stopped(chain, judge(chain, ckpt, (job_dir / CANCEL_MARK).exists()), job_dir, me[0]):
        write_chain(job_dir, data, chain)
        return SKIP
    stamp, _ = now_utc()
    chain.segments.append(
        Segment(n=len(chain.segments) + 1, job_id=me[0], restart=me[1], steps_before=steps,
                started_utc=stamp)
    )  # fmt: skip
    chain.state, chain.reason = "running", ""
    if chain.next_job_id in (None, me[0]) and len(chain.segments) < chain.max_segments:
        chain.next_job_id = _submit_next(chain, me[0])
    write_chain(job_dir, data, chain)
    if (job_dir / CANCEL_MARK).exists():  # cancelled while we queued the successor
        _cancel(chain.next_job_id, me[0])
        return SKIP
    return RUN


def _stopped(chain: ChainRecord, stop: Verdict | None, job_dir: Path, me: str) -> bool:
    """Apply a stop verdict: record why, cancel the queued successor, drop the kept secrets."""
    if stop is None:
        return False
    chain.state, chain.reason = stop.state, stop.reason
    _cancel(chain.next_job_id, me)
    chain.next_job_id = None
    _forget_secrets(job_dir)
    return True


def end(job_dir: Path, exit_code: int, env: Mapping[str, str] | None = None) -> int:
    """Record how this segment ended; cancel the successor when the chain must not go on."""
    env = os.environ if env is None else env
    me = _whoami(env)
    data, chain = read_chain(job_dir)
    seg = chain.segment(*me)
    if seg is None:
        return exit_code
    ckpt = latest_checkpoint(Path(chain.checkpoint_dir))
    failure, state = None, "COMPLETED" if exit_code == 0 else "FAILED"
    if exit_code != 0:
        # ray.sub may exit in the seconds Slurm gives a job it kills (preemption, time limit,
        # scancel, requeue): the controller already knows, and its state is the segment's.
        now, restarts = _controller_view(me[0])
        if restarts > seg.restart or now in REQUEUING:
            return exit_code  # it runs again: its next `begin` closes this segment as REQUEUED
        if now in KILLED:
            state = now
        logs = segment_logs(chain.log_dir, str(job_dir), seg.job_id, seg.restart)
        failure = classify(state, exit_code, logs)
    seg.close(state, exit_code, ckpt.total_steps if ckpt else 0, failure)
    _stopped(chain, judge(chain, ckpt, (job_dir / CANCEL_MARK).exists(), exit_code), job_dir, me[0])
    write_chain(job_dir, data, chain)
    return exit_code
