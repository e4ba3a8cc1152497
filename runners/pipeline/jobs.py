"""A pipeline on a cluster as the job commands see it: its record, each stage's live state, and the
stage `logs` and `diagnose` go to (the failed one, else the running one, else the last)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from catalog.errors import StepsError
from catalog.record_file import read_json_object

PIPELINE = "pipeline.json"
RECORD = "record.json"


@dataclass
class StageState:
    """One stage now: completed, cached, failed, running, pending, not run or unknown, with the
    detail (scheduler state, exit code, chain summary, why it did not run)."""

    id: str
    status: str
    job_id: str | None = None
    run_dir: str | None = None
    detail: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def pipeline_record(path: Path) -> dict | None:
    """The cluster pipeline record of a pipeline root (None when `path` is not one)."""
    data = read_json_object(path / PIPELINE)
    return data if data is not None and _queued(data.get("executor")) else None


def stage_run_dir(path: Path) -> Path | None:
    """The run dir a pipeline stage's folder (`<root>/<stage>`) records (None: not one)."""
    data = read_json_object(path / RECORD)
    run_dir = (data or {}).get("run_dir")
    return Path(run_dir) if data and _queued(data.get("executor")) and run_dir else None


def _queued(executor: Any) -> bool:
    """A record of a pipeline queued on a cluster: its backend queues jobs (has `sbatch`)."""
    from runners.launch.backends import find

    backend = find(executor) if isinstance(executor, str) else None
    return backend is not None and "sbatch" in backend.has


def live_state(stage_id: str, run_dir: Path) -> StageState:
    """A submitted stage's state, asked of its cluster (a chain: done is completed)."""
    from runners.launch.jobs import find_run
    from runners.launch.request import TERMINAL, UNKNOWN
    from runners.run.job_view import live

    try:
        found, data = find_run(str(run_dir), None)
        data, job, chain = live(found, data)
    except StepsError as exc:
        return StageState(stage_id, "unknown", None, str(run_dir), exc.finding.message)
    where = StageState(stage_id, "running", job.job_id, str(run_dir))
    if chain is not None:
        where.detail = chain.summary()
        where.status = {"done": "completed", "queued": "pending", "running": "running"}.get(
            chain.state, "failed"
        )
        return where
    code = f" (exit code {job.exit_code})" if job.exit_code is not None else ""
    where.detail = f"{job.state}{code}" + (f": {job.reason}" if job.reason else "")
    named = {UNKNOWN: "unknown", "COMPLETED": "completed", "PENDING": "pending"}
    where.status = named.get(job.state) or ("failed" if job.state in TERMINAL else "running")
    return where


def pipeline_states(record: dict) -> list[StageState]:
    """Every stage of the record, in order; a stage after one that failed is `not run`."""
    states: list[StageState] = []
    stopped: dict[str, str] = {}  # stage -> the failed stage that stops it
    ended_ok: set[str] = set()
    for sid, entry in record.get("stages", {}).items():
        after = entry.get("after_stages", [])
        upstream = [stopped.get(a, a) for a in after if a in stopped]
        if entry.get("action") == "cached":
            states.append(StageState(sid, "cached", None, entry.get("run_dir"), "up to date"))
            ended_ok.add(sid)
            continue
        state = live_state(sid, Path(entry["run_dir"]))
        waiting = [a for a in after if a not in ended_ok]
        if upstream and state.status in ("failed", "pending", "unknown"):
            state.status, state.detail = "not run", f"{upstream[0]} failed ({state.detail})"
        elif waiting and state.status == "failed":  # ended (cancelled) still waiting on `after`
            state.status = "not run"
            state.detail = f"ended before {waiting[0]} did ({state.detail})"
        if state.status == "completed":
            ended_ok.add(sid)
        states.append(state)
        if state.status in ("failed", "not run"):
            stopped[sid] = upstream[0] if upstream else sid
    return states


def verdict(states: list[StageState]) -> tuple[str, StageState | None]:
    """(the pipeline's state, its stage): the first failed, else the first not completed."""
    for s in states:
        if s.status == "failed":
            return "failed", s
    for s in states:
        if s.status not in ("completed", "cached"):
            return s.status if s.status == "unknown" else "running", s
    return "completed", states[-1] if states else None


def cancel_run(run_dir: str) -> tuple[Path, str]:
    """Cancel the job of `run_dir` if still queued or running: (the run found, what was said)."""
    from runners.launch.jobs import find_run
    from runners.run.job_view import cancel

    found, data = find_run(run_dir, None)
    return found, cancel(found, data)


def cancel_pipeline(record: dict) -> list[str]:
    """Cancel every stage's job still queued or running (and a chain's gate); what was said."""
    said = []
    for sid, entry in reversed(list(record.get("stages", {}).items())):
        if entry.get("action") == "cached" or not entry.get("run_dir"):
            continue
        for run_dir in filter(None, [entry["run_dir"], entry.get("gate_run_dir")]):
            try:
                said.append(f"{sid}: {cancel_run(run_dir)[1]}")
            except StepsError as exc:
                said.append(f"{sid}: {exc.finding.message}")
    return said


def focus(states: list[StageState]) -> StageState | None:
    """The stage `logs` and `diagnose` go to: the failed one, else the running one, else the last
    with a run dir."""
    _, named = verdict(states)
    if named is not None and named.run_dir and named.status not in ("cached", "not run"):
        return named
    with_run = [s for s in states if s.run_dir and s.status != "cached"]
    return with_run[-1] if with_run else None
