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
from runners.launch.request import TERMINAL, UNKNOWN, unknown
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
        if data["job"].get("job_id") is not None and str(data["job"]["job_id"]) == ref:
            return run_dir, data
    raise StepsError(
        "E-RUN-UNKNOWN",
        f"no run '{ref}' under {root}",
        fix="pass a run dir, a job id or `last`; `python -m steps jobs` lists them",
        exit_code=2,
    )


def refresh(run_dir: Path, data: dict, env: dict[str, str] | None = None) -> dict:
    """The job with its live state (written back to run.json when it changed); UNKNOWN with
    `reason` (never saved) when the cluster cannot say."""
    return refresh_all([(run_dir, data)], env)[0]


def _group_key(job: dict) -> tuple:
    """Jobs answered by one round trip: same executor, host (and ssh options) or address."""
    return (
        job.get("executor"),
        job.get("host"),
        tuple(job.get("ssh_options") or ()),
        job.get("address"),
    )


def _refresh_group(jobs: list[dict], env: dict[str, str] | None) -> list[dict]:
    """One backend call for a group; any failure marks each of its jobs UNKNOWN, with why."""
    try:
        return backend_for_job(jobs[0], env).refresh_many([dict(j) for j in jobs])
    except StepsError as exc:
        return [unknown(j, exc.finding.message) for j in jobs]
    except (KeyError, TypeError, ValueError) as exc:
        return [unknown(j, f"unreadable job record ({type(exc).__name__}: {exc})") for j in jobs]


def refresh_all(runs: list[tuple[Path, dict]], env: dict[str, str] | None = None) -> list[dict]:
    """Every run's live job, in order: one round trip per host, the hosts asked concurrently;
    one host that does not answer leaves the others' answers intact."""
    from concurrent.futures import ThreadPoolExecutor

    out: list[dict] = [dict(data["job"]) for _, data in runs]
    groups: dict[tuple, list[int]] = {}
    for i, job in enumerate(out):
        if job.get("state") not in TERMINAL:
            groups.setdefault(_group_key(job), []).append(i)
    if groups:
        with ThreadPoolExecutor(max_workers=min(8, len(groups))) as pool:
            answers = {
                key: pool.submit(_refresh_group, [out[i] for i in idx], env)
                for key, idx in groups.items()
            }
            for key, idx in groups.items():
                for i, new in zip(idx, answers[key].result(), strict=True):
                    out[i] = new
    for (run_dir, data), new in zip(runs, out, strict=True):
        saved = _saved(new)
        if saved != data["job"]:
            update_record(run_dir, job=saved)
    return out


def _saved(job: dict) -> dict:
    """What run.json keeps of a shown record: an UNKNOWN state is not news, the last known is."""
    if job.get("state") != UNKNOWN:
        return job
    kept = {k: v for k, v in job.items() if k not in ("last_known_state", "reason")}
    kept["state"] = job.get("last_known_state")
    return kept
