"""Jobs launched from here: their run dirs under ./runs, found by dir, job id or `last`.

A cluster run's run.json carries `job` (executor, profile, host, job id, log path, submitted
time, state, exit code); `refresh` asks the job's backend for its live state and writes it back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from catalog.errors import StepsError
from runners.launch.backends import backend_for_job
from runners.launch.request import TERMINAL
from runners.rundir import RECORD, read_record, runs_root, update_record


def job_runs(root: Path) -> list[tuple[Path, dict]]:
    """(run dir, record) for every run with a job record, newest first."""
    found: list[tuple[Path, dict]] = []
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
            found.append((run_dir, data))
    found.sort(key=lambda item: item[1]["job"].get("submitted_utc", ""), reverse=True)
    return found


def find_run(
    ref: str, runs_dir: str | None, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> tuple[Path, dict]:
    """RUN = a run dir, a job id (Slurm id or Ray submission id), or `last`."""
    env = os.environ if env is None else env
    cwd = cwd or Path.cwd()
    path = (cwd / ref).resolve()
    if (path / RECORD).is_file():
        data = read_record(path)
        if not isinstance(data.get("job"), dict):
            raise StepsError(
                "E-RUN-NO-JOB",
                f"{path} was not launched on a cluster (no job in run.json)",
                fix="name a run launched with --run/--batch (see `python -m steps jobs`)",
                exit_code=2,
            )
        return path, data
    root = runs_root(runs_dir, env, cwd)
    runs = job_runs(root)
    if ref == "last" and runs:
        return runs[0]
    for run_dir, data in runs:
        if str(data["job"].get("job_id")) == ref:
            return run_dir, data
    raise StepsError(
        "E-RUN-UNKNOWN",
        f"no run '{ref}' under {root}",
        fix="pass a run dir, a job id or `last`; `python -m steps jobs` lists them",
        exit_code=2,
    )


def refresh(run_dir: Path, data: dict, env: dict[str, str] | None = None) -> dict:
    """The job with its live state (written back to run.json when it changed)."""
    job = data["job"]
    if job.get("state") in TERMINAL:
        return job
    new = backend_for_job(job, env).refresh(dict(job))
    if new != job:
        update_record(run_dir, job=new)
    return new
