"""Jobs launched from here: their run dirs under ./runs, found by dir, job id or `last`; their
live state (`refresh`), progress (`progress_all`) and `watch` (`status -f`). Every record is read
through runners/launch/records.py: only yours, and located by its profile.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from catalog.errors import StepsError
from runners.launch.records import backend_for_job, job_of, locate, located, read_job_run, untrusted
from runners.launch.request import TERMINAL, UNKNOWN, unknown
from runners.rundir import RECORD, JobRecord, read_record, runs_root, update_record

if TYPE_CHECKING:
    from runners.monitor.progress import Progress

T = TypeVar("T")
R = TypeVar("R")


def _records(root: Path) -> list[tuple[Path, dict, StepsError | None]]:
    """(run dir, run.json, why it is not to be used) for every run with a job, newest first."""
    found: list[tuple[Path, dict, StepsError | None]] = []
    if not root.is_dir():
        return found
    for record in root.glob(f"**/{RECORD}"):
        run_dir = record.parent
        if run_dir.name.startswith("."):
            continue
        try:
            data = read_record(run_dir)
        except StepsError:
            continue
        if isinstance(data.get("job"), dict):
            found.append((run_dir, data, untrusted(run_dir, root)))
    found.sort(key=lambda item: str(item[1]["job"].get("submitted_utc") or ""), reverse=True)
    return found


def job_runs(
    root: Path,
    skipped: list[StepsError] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> list[tuple[Path, dict]]:
    """(run dir, located record) of every trusted run with a job, newest first; the others
    are added to `skipped`."""
    runs = []
    for run_dir, data, refused in _records(root):
        if refused is not None:
            if skipped is not None:
                skipped.append(refused)
            continue
        runs.append((run_dir, locate(data, env, cwd)))
    return runs


def find_run(
    ref: str, runs_dir: str | None, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> tuple[Path, dict]:
    """RUN = a run dir, a job id or `last`, its job located; E-RECORD-UNTRUSTED or
    E-RECORD-PROFILE (exit 2) when not yours alone or its cluster is unknown."""
    env = os.environ if env is None else env
    cwd = cwd or Path.cwd()
    root = runs_root(runs_dir, env, cwd)
    path = (cwd / ref).resolve()
    if (path / RECORD).is_file():
        data = locate(read_job_run(path, root.resolve()), env, cwd)
        located(job_of(data))
        return path, data
    runs = _records(root)
    chosen = runs[:1] if ref == "last" else []
    chosen = chosen or [r for r in runs if r[2] is None and _job_id(r[1]) == ref]
    chosen = chosen or [r for r in runs if _job_id(r[1]) == ref]
    if not chosen:
        raise StepsError(
            "E-RUN-UNKNOWN",
            f"no run '{ref}' under {root}",
            fix="pass a run dir, a job id or `last`; `python -m steps jobs` lists them",
            exit_code=2,
        )
    run_dir, data, refused = chosen[0]
    if refused is not None:
        raise refused
    data = locate(data, env, cwd)
    located(job_of(data))
    return run_dir, data


def _job_id(data: dict) -> str | None:
    job_id = data["job"].get("job_id")
    return None if job_id is None else str(job_id)


def refresh(run_dir: Path, data: dict, env: dict[str, str] | None = None) -> JobRecord:
    """The job with its live state (saved when it changed; UNKNOWN never is)."""
    return refresh_all([(run_dir, data)], env)[0]


def _refresh_group(jobs: list[JobRecord], env: dict[str, str] | None) -> list[JobRecord]:
    """One backend call for a group; any failure marks each of its jobs UNKNOWN, with why."""
    try:
        return backend_for_job(jobs[0], env).refresh_many([j.model_copy() for j in jobs])
    except StepsError as exc:
        return [unknown(j, exc.finding.message) for j in jobs]
    except (KeyError, TypeError, ValueError) as exc:
        return [unknown(j, f"unreadable job record ({type(exc).__name__}: {exc})") for j in jobs]


def refresh_all(
    runs: list[tuple[Path, dict]], env: dict[str, str] | None = None
) -> list[JobRecord]:
    """Every run's live job, in order: one round trip per host, the hosts side by side."""
    out = [job_of(data) for _, data in runs]
    groups: dict[tuple, list[int]] = {}
    for i, job in enumerate(out):
        if job.unlocated is not None:  # no cluster to ask: never a command from the record
            out[i] = unknown(job, job.unlocated.message)
        elif job.state not in TERMINAL:
            # one round trip: same executor, host (and ssh options) or address
            key = (job.executor, job.host, tuple(job.ssh_options), job.address)
            groups.setdefault(key, []).append(i)
    asked = [[out[i] for i in idx] for idx in groups.values()]
    answers = _each(lambda jobs: _refresh_group(jobs, env), asked)  # the hosts side by side
    for idx, answer in zip(groups.values(), answers, strict=True):
        for i, new in zip(idx, answer, strict=True):
            out[i] = new
    for (run_dir, data), new in zip(runs, out, strict=True):
        saved = _saved(new).dump()
        if saved != data["job"] and new.unlocated is None:
            update_record(run_dir, job=saved)
    return out


def _each(fn: Callable[[T], R], items: list[T]) -> list[R]:
    """[fn(item) for item in items], up to 8 side by side (one: no pool to start)."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
        return list(pool.map(fn, items))


def _saved(job: JobRecord) -> JobRecord:
    """What run.json keeps of a shown record: an UNKNOWN state is not news, the last known is."""
    if job.state != UNKNOWN:
        return job
    kept = job.model_copy(update={"state": job.last_known_state})
    kept.forget("last_known_state", "reason")
    return kept


NOT_STARTED = ("PENDING", "SUBMITTING", "NOT_SUBMITTED", "UNKNOWN")


def progress_of(
    run_dir: Path, data: dict, job: JobRecord, stall_factor: float
) -> tuple[Progress | None, str | None]:
    """The run's Progress, or None with the reason when its files cannot be read."""
    from runners.launch.observe import run_jobs, run_progress

    try:
        jobs = run_jobs(data, job)  # a chain: GPU-hours over every segment
        return run_progress(run_dir, {**data, "job": job.dump()}, jobs, stall_factor), None
    except StepsError as exc:
        return None, exc.finding.message


def progress_all(runs: list[tuple[Path, dict]], jobs: list[JobRecord]) -> list[Progress | None]:
    """Each run's progress (None: none to show), read side by side; an ended job's is kept in
    run.json as `final_progress` the first time."""
    import contextlib

    from runners.monitor.progress import Progress

    def one(item: tuple[tuple[Path, dict], JobRecord]) -> Progress | None:
        (run_dir, data), job = item
        if job.state in NOT_STARTED or not job.job_id:
            return None
        final = data.get("final_progress")
        progress = None
        if job.state in TERMINAL and isinstance(final, dict):
            with contextlib.suppress(TypeError):  # written by another version of Progress
                progress = Progress(**final)
        if progress is None:
            try:
                progress, _ = progress_of(run_dir, data, job, 5.0)
            except (OSError, ValueError, KeyError, TypeError):  # one odd run: no progress
                return None
            if progress is not None and job.state in TERMINAL:
                update_record(run_dir, final_progress=progress.to_dict())
        return progress if progress and (progress.step or progress.max_steps) else None

    return _each(one, list(zip(runs, jobs, strict=True)))


@dataclass
class Refreshed:
    """One refresh of a watched job; `silent` when the cluster has not answered for too long."""

    job: JobRecord
    progress: Progress | None = None
    why: str | None = None
    silent: bool = False


def watch(
    run_dir: Path, data: dict, job: JobRecord, interval: float, stall_factor: float
) -> Iterator[Refreshed]:
    """Refresh every `interval` s until the job ends; a cluster silent for
    STEPS_SILENT_SECONDS ends the watch with a `silent` refresh."""
    from runners.launch.shell import seconds

    silent_since = None
    while job.state not in TERMINAL:
        time.sleep(max(interval, 0.1))
        data = {**data, "job": job.dump()}
        job = refresh(run_dir, data)
        if job.state == UNKNOWN:
            silent_since = silent_since or time.monotonic()
            silent = time.monotonic() - silent_since >= seconds("SILENT")
            yield Refreshed(job, why=job.reason, silent=silent)
            if silent:
                return
            job = job.model_copy(update={"state": job.last_known_state})
            continue
        silent_since = None
        progress, why = progress_of(run_dir, data, job, stall_factor)
        yield Refreshed(job, progress, why)
