"""What Slurm says about jobs, asked in one remote_probe per host: their states, a job found by
its unique name, and the follow stream of one job (one JSON event a line). A followed job whose
state stays UNKNOWN for STEPS_SILENT_SECONDS, or a stream that ends or goes quiet before the
job's end, is lost contact.
"""

from __future__ import annotations

import base64
import codecs
import json
import os
import subprocess
import sys
from typing import Any

from runners.launch import slurm_queries
from runners.launch.request import TERMINAL, UNKNOWN, unknown
from runners.launch.shell import LostContact, Shell
from runners.rundir import JobRecord


def exit_code_of(state: str, code: str) -> int | None:
    """Slurm's `exit:signal` as a process exit code, None before the job's end."""
    return slurm_queries.exit_code_of(state, code, TERMINAL)


def _job(job: JobRecord) -> dict[str, str]:
    """A job as remote_probe asks about it: its id, else its name; the batch output."""
    return {
        "id": job.job_id or "",
        "name": job.job_name or "",
        "out": job.batch_output or job.log_path or "",
    }


def refresh_many(shell: Shell, jobs: list[JobRecord]) -> list[JobRecord]:
    """Each job's current record, one round trip for all (unconfirmed ones found by name)."""
    request = {"op": "states", "jobs": [_job(j) for j in jobs], "terminal": sorted(TERMINAL)}
    got = shell.ask(request, what="asking Slurm for job states (squeue, scontrol, sacct)")
    rows: list[dict[str, Any]] = got.get("rows") or []
    return [_row(job, rows[i] if i < len(rows) else None) for i, job in enumerate(jobs)]


def _row(job: JobRecord, row: dict[str, Any] | None) -> JobRecord:
    """The job as remote_probe's answer `row` ({id, state, code} or {why}) says it is."""
    if row is None:
        return unknown(job, "no answer")
    if not row.get("id"):  # looked up by name: none, or Slurm could not be asked
        if "why" not in row:
            why = f"no job named {job.job_name} is known to Slurm"
            return job.model_copy(update={"reason": why})
        return unknown(job, row["why"] or "Slurm did not answer")
    job = job.model_copy(update={"job_id": str(row["id"])})
    state = row.get("state") or UNKNOWN
    if state == UNKNOWN:
        return unknown(job, row.get("why") or "Slurm does not know the job")
    code = exit_code_of(state, row.get("code") or "")
    return job.model_copy(update={"state": state, "exit_code": code})


def lookup(shell: Shell, name: str) -> tuple[str | None, str]:
    """(job id, "") when Slurm knows a job named `name`; (None, why) when not or unknown."""
    got = shell.ask({"op": "lookup", "name": name}, what=f"looking up job {name} (squeue, sacct)")
    job_id = str(got.get("id") or "").strip()
    if job_id.isdigit():
        return job_id, ""
    if "why" not in got:
        return None, f"Slurm on {shell.where} knows no job named {name}"
    return None, f"Slurm on {shell.where} could not be asked: {got['why'] or 'no answer'}"


def _shown(state: dict[str, Any]) -> str:
    """A state as the follow prints it: `RUNNING`, or `UNKNOWN: why`."""
    if state.get("state") == UNKNOWN:
        return f"{UNKNOWN}: {state.get('why') or 'Slurm does not know the job'}"
    return str(state.get("state"))


def follow(shell: Shell, job: JobRecord, until_done: bool, follow: bool) -> int | None:
    """Print the driver log (as it grows when following); the exit code when done."""
    silent = max(1.0, shell.seconds("SILENT"))
    poll = float(os.environ.get("STEPS_POLL_SECONDS", "2"))
    request = {
        "op": "follow", **_job(job), "log": job.log_path or "", "poll": poll,
        "silent": silent, "until_done": until_done, "follow": follow, "terminal": sorted(TERMINAL),
    }  # fmt: skip
    # The remote loop speaks at least once per poll plus its Slurm calls.
    quiet = 3 * shell.seconds("SLURM_CALL") + poll + 30
    stream = shell.stream(request)
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    try:
        while True:
            try:
                raw = stream.line(quiet)
            except TimeoutError:
                raise LostContact(shell.where, f"no word for {quiet:g} s") from None
            try:
                event = json.loads(raw) if raw is not None else None
            except ValueError:
                event = None
            if not isinstance(event, dict):
                try:
                    code = stream.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    code = None
                why = stream.stderr_tail() or f"the stream ended (exit status {code})"
                raise LostContact(shell.where, why)
            if "log" in event:
                sys.stdout.write(decode(base64.b64decode(event["log"])))
                sys.stdout.flush()
            elif "state" in event and until_done:
                print(f"job {job.job_id}: {_shown(event['state'])}", file=sys.stderr, flush=True)
            elif "lost" in event:
                why = event["lost"].get("why") or "Slurm does not know the job"
                raise LostContact(f"Slurm on {shell.where}", f"{why}, for {silent:g} s")
            elif "end" in event:
                state, said = event["end"].get("state"), event["end"].get("code") or ""
                if state != UNKNOWN:
                    job.state, job.exit_code = state, exit_code_of(state, said)
                return job.exit_code if state in TERMINAL else None
    finally:
        sys.stdout.write(decode(b"", final=True))
        stream.close()
