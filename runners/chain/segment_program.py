"""A chain segment's decisions, run by the segment script on the allocation's first node.

`python3 -I JOB_DIR/code/runners/chain/segment_program.py begin|end JOB_DIR [EXIT_CODE]`, outside
the container with the node's `python3` (3.8+); it imports only stdlib-only modules from the
copy of our code staged with the run dir. `begin` closes a segment killed before its `end`,
then stops the chain (prints `skip`) or records this segment, queues its successor
(`afterany`, so the chain goes on when this job is killed) and prints `run`. `end` records how
the segment ended and cancels the successor when the chain must not go on.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

if __name__ == "__main__":  # run as a file (-I: no script dir on sys.path): the staged copy
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from catalog.atomic_write import write_atomic
from runners.chain import rules
from runners.launch import slurm_queries

RECORD = "run.json"
CANCEL_MARK = "CHAIN_CANCELLED"  # in the job dir: `cancel RUN` was asked; no segment may start
CHAIN_SECRETS = ".steps-chain-secrets.env"  # the chain's 0600 copy of the run's secrets file
SECRETS_FILE = ".steps-secrets.env"  # launch/job_secrets.py: the file each driver reads once
RUN, SKIP = "run", "skip"
ENDED = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE",
}  # fmt: skip
KILLED = {"PREEMPTED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "DEADLINE"}
REQUEUING = {"REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "PENDING"}
SETTLE_POLLS = 60  # x 0.5 s: how long a killed segment's job may stay COMPLETING
REQUEUE_RECHECK_S = 60  # a successor that found its predecessor requeued looks again this late
# What sbatch inside a job must not inherit: the running job's own SLURM_* variables.
CLEAN_ENV = (
    'for n in $(compgen -e); do case $n in SLURM_CONF) ;; SLURM_*) unset "$n" ;; esac; done\n'
)


class Refused(Exception):
    """A finding the segment script prints (code, message, fix) before it exits 2."""

    def __init__(self, code: str, message: str, fix: str) -> None:
        super().__init__(f"{code} {message}\n  Fix: {fix}")


def whoami(env: Mapping[str, str]) -> tuple[str, int]:
    """(SLURM_JOB_ID, SLURM_RESTART_COUNT) of the running segment."""
    job_id = env.get("SLURM_JOB_ID")
    if not job_id:
        raise Refused(
            "E-CHAIN-SEGMENT",
            "the chain's decisions run inside a chain's Slurm job (SLURM_JOB_ID is not set)",
            "submit the run with `python -m steps run ... --batch PROFILE --until-done`",
        )
    return job_id, int(env.get("SLURM_RESTART_COUNT") or 0)


def read_chain(job_dir: str | Path) -> tuple[dict, dict]:
    """(run.json, its chain) of the job dir."""
    path = Path(job_dir) / RECORD
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data, dict(data["chain"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Refused(
            "E-CHAIN-RECORD",
            f"no readable chain record in {path}: {exc}",
            "name the job dir of a run submitted with --until-done",
        ) from None


def write_chain(job_dir: str | Path, data: dict, chain: dict) -> None:
    """Rewrite run.json with this chain, atomically."""
    write_atomic(Path(job_dir) / RECORD, json.dumps(dict(data, chain=chain), indent=2) + "\n")


def controller_view(job_id: str) -> tuple[str | None, int]:
    """(JobState, Restarts) as slurmctld sees a job now ((None, 0): gone, or no answer)."""
    record = slurm_queries.show_job(job_id)[0] or {}
    restarts = record.get("Restarts", "")
    return record.get("JobState") or None, int(restarts) if restarts.isdigit() else 0


def slurm_end(seg: dict, job_dir: Path) -> tuple[str, int | None]:
    """A segment job's Slurm state and exit code, once it has left COMPLETING: a job killed for
    a requeue passes through it on its way back to PENDING."""
    out = f"{job_dir}/slurm-{seg['job_id']}.out"
    for _ in range(SETTLE_POLLS):
        got = slurm_queries.job_state(seg["job_id"], out, ENDED)
        if got.get("state") != "COMPLETING":
            break
        time.sleep(0.5)
    if controller_view(seg["job_id"])[1] > seg.get("restart", 0):  # requeued: whatever it showed
        return "REQUEUED", None
    state = got.get("state") or slurm_queries.UNKNOWN
    return state, slurm_queries.exit_code_of(state, got.get("code") or "", ENDED)


def run_bash(script: str, what: str) -> subprocess.CompletedProcess:
    """A bash script's outcome; a Slurm command that cannot start is a Refused finding."""
    try:
        return subprocess.run(["bash", "-s"], input=script, capture_output=True, text=True,
                              timeout=4 * slurm_queries.CALL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Refused(
            "E-CHAIN-SUBMIT", f"{what} failed: {exc}", "check that Slurm answers"
        ) from None


def submit_next(chain: dict, after: str, delay: int = 0) -> str:
    """sbatch the next segment behind job `after`, with this job's environment (secrets too)."""
    sbatch = chain["sbatch"]
    argv = [*sbatch[:2], f"--dependency=afterany:{after}", "--kill-on-invalid-dep=yes"]
    if delay:
        argv.append(f"--begin=now+{delay}")
    argv += sbatch[2:]
    script = f"{CLEAN_ENV}cd {shlex.quote(chain['submit_cwd'])}\nexec {shlex.join(argv)}\n"
    proc = run_bash(script, "sbatch of the next segment")
    job_id = proc.stdout.strip().split(";")[0]
    if proc.returncode != 0 or not job_id.isdigit():
        raise Refused(
            "E-CHAIN-SUBMIT",
            f"sbatch of the next segment failed: {(proc.stderr or proc.stdout).strip()}",
            "check the partition's limits; the chain goes on once a segment is queued "
            "again (`python -m steps status RUN`)",
        )
    return job_id


def cancel(job_id: str | None, me: str) -> None:
    if job_id and job_id != me:
        run_bash(f"scancel {shlex.quote(job_id)}\n", "scancel of the queued segment")


def close(seg: dict, chain: dict, job_dir: Path, state: str, code: int | None, steps: int) -> None:
    """Fill in a segment that never reached its own `end` (killed, or requeued)."""
    logs = rules.segment_logs(chain["log_dir"], str(job_dir), seg["job_id"], seg.get("restart", 0))
    rules.close_segment(seg, state, code, steps, rules.classify(state, code, logs))


def stopped(chain: dict, stop: tuple[str, str] | None, job_dir: Path, me: str) -> bool:
    """Apply a stop verdict: record why, cancel the queued successor, drop the kept secrets."""
    if stop is None:
        return False
    chain["state"], chain["reason"] = stop
    cancel(chain.get("next_job_id"), me)
    chain["next_job_id"] = None
    gate = chain.get("gate_job_id")  # a pipeline's next stages wait for it
    if gate:
        how = "scontrol release" if stop[0] == "done" else "scancel"
        run_bash(f"{how} {shlex.quote(gate)}\n", f"{how} of the pipeline's gate job")
    for name in (CHAIN_SECRETS, SECRETS_FILE):
        (Path(job_dir) / name).unlink(missing_ok=True)
    return True


def _training(chain: dict) -> tuple[dict | None, int]:
    """(the latest checkpoint's training_info or None, its global step)."""
    found = rules.latest_checkpoint(chain["checkpoint_dir"])
    info = found[1] if found else None
    return info, info["total_steps"] if info else 0


def begin(job_dir: str | Path, env: Mapping[str, str] | None = None) -> str:
    """RUN when this segment may train; SKIP (after stopping the chain) when it may not."""
    job_dir = Path(job_dir)
    me, restart = whoami(os.environ if env is None else env)
    data, chain = read_chain(job_dir)
    info, steps = _training(chain)
    for seg in chain["segments"]:
        if seg.get("ended_utc") is not None:
            continue
        if seg["job_id"] == me:  # the same job again: `scontrol requeue`, a node failure
            close(seg, chain, job_dir, "REQUEUED", None, steps)
            continue
        state, code = slurm_end(seg, job_dir)
        if state not in ENDED:  # requeued: it runs again, and it must run alone
            # Slurm may count a requeued job as ended for a new dependency: look again later.
            chain["next_job_id"] = submit_next(chain, seg["job_id"], delay=REQUEUE_RECHECK_S)
            write_chain(job_dir, data, chain)
            return f"{SKIP} (segment {seg['n']}, job {seg['job_id']}, runs again: queued behind it)"
        close(seg, chain, job_dir, state, code, steps)
    cancelled = (job_dir / CANCEL_MARK).exists()
    if stopped(chain, rules.judge(chain, info, cancelled), job_dir, me):
        write_chain(job_dir, data, chain)
        return SKIP
    chain["segments"].append(rules.new_segment(len(chain["segments"]) + 1, me, restart, steps))
    chain["state"], chain["reason"] = "running", ""
    if chain.get("next_job_id") in (None, me) and len(chain["segments"]) < chain["max_segments"]:
        chain["next_job_id"] = submit_next(chain, me)
    write_chain(job_dir, data, chain)
    if (job_dir / CANCEL_MARK).exists():  # cancelled while we queued the successor
        cancel(chain["next_job_id"], me)
        return SKIP
    return RUN


def end(job_dir: str | Path, exit_code: int, env: Mapping[str, str] | None = None) -> int:
    """Record how this segment ended; cancel the successor when the chain must not go on."""
    job_dir = Path(job_dir)
    me, restart = whoami(os.environ if env is None else env)
    data, chain = read_chain(job_dir)
    mine = (me, restart)
    seg = next((s for s in chain["segments"] if (s["job_id"], s.get("restart", 0)) == mine), None)
    if seg is None:
        return exit_code
    info, steps = _training(chain)
    failure, state = None, "COMPLETED" if exit_code == 0 else "FAILED"
    if exit_code != 0:
        # ray.sub may exit in the seconds Slurm gives a job it kills (preemption, time limit,
        # scancel, requeue): the controller already knows, and its state is the segment's.
        now, restarts = controller_view(me)
        if restarts > restart or now in REQUEUING:
            return exit_code  # it runs again: its next `begin` closes this segment as REQUEUED
        if now in (None, "COMPLETING") and chain.get("next_job_id") not in (None, me):
            # Slurm is killing the job (or did not answer in time): FAILED could stop the chain
            # on a time limit, so the successor's `begin` closes it with Slurm's final state.
            return exit_code
        if now in KILLED:
            state = now
        logs = rules.segment_logs(chain["log_dir"], str(job_dir), me, restart)
        failure = rules.classify(state, exit_code, logs)
    rules.close_segment(seg, state, exit_code, steps, failure)
    cancelled = (job_dir / CANCEL_MARK).exists()
    stopped(chain, rules.judge(chain, info, cancelled, exit_code), job_dir, me)
    write_chain(job_dir, data, chain)
    return exit_code


def main(argv: list[str]) -> int:
    """`begin JOB_DIR` prints run or skip; `end JOB_DIR EXIT_CODE`. A finding exits 2."""
    usage = "usage: segment_program.py begin JOB_DIR | end JOB_DIR EXIT_CODE"
    if len(argv) < 2 or argv[0] not in ("begin", "end") or (argv[0] == "end" and len(argv) < 3):
        print(usage, file=sys.stderr)
        return 2
    try:
        if argv[0] == "begin":
            print(begin(argv[1]), flush=True)
        else:
            end(argv[1], int(argv[2]))
    except Refused as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
