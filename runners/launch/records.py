"""Job records (run.json `job`) as `jobs`, `status`, `logs`, `cancel` and `diagnose` use them.

A record is data, never a source of commands: whoever can write a run.json would otherwise
choose the ssh options those commands run. So a record is read only when it is yours and no one
else can write it or a folder up to the runs root (E-RECORD-UNTRUSTED), and where its job runs is
taken each time from its profile in a trusted env.toml, never from the record; a record whose
host or address is not its profile's is not asked about (the same id elsewhere is another job).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from catalog import file_trust
from catalog.errors import StepsError
from catalog.file_trust import problem
from catalog.model_errors import dotted, error_from
from runners.rundir import RECORD, JobRecord, Unlocated, read_record

if TYPE_CHECKING:
    from runners.launch.profiles.env_toml import Profile
    from runners.launch.request import Backend
    from runners.launch.shell import Shell

UNLOCATED = "unlocated"  # in a job: why its cluster is unknown ({message, fix}); never asked
LOCATION = ("host", "ssh_options", "remote_dir", "address")
_FIX_RECORD = "name a run dir written by `python -m steps run` (see `python -m steps jobs`)"
_FIX_LOCATE = (
    "restore the profile the job was launched with (its name and host or address), or pass "
    "its env.toml in $STEPS_ENV_FILE"
)


def untrusted(run_dir: Path, root: Path | None = None) -> StepsError | None:
    """E-RECORD-UNTRUSTED (exit 2) when run.json, the run dir or a folder up to `root` is
    another user's or writable by others."""
    items = [(run_dir / RECORD, False), (run_dir, True)]
    if root is not None and run_dir.is_relative_to(root):
        items += [(p, True) for p in run_dir.parents if p.is_relative_to(root)]
    return file_trust.untrusted(
        items,
        str(run_dir / RECORD),
        "a job record is used only when it is yours and no one else can write it or its folders",
        f"delete the run dir (`rm -r {shlex.quote(str(run_dir))}`)",
    )


def job_of(data: Mapping[str, Any], run_dir: Path | None = None) -> JobRecord:
    """run.json's `job` as its model; E-RUN-RECORD (exit 2) when it does not fit."""
    from runners.launch.backends import find, known

    path = run_dir / RECORD if run_dir is not None else None
    try:
        job = JobRecord.model_validate(data.get("job"))
    except ValidationError as exc:
        raise error_from(
            exc,
            exit_code=2,
            code="E-RUN-RECORD",
            path=path,
            data=data.get("job"),
            message=lambda err, loc: (
                f"the job record does not fit its format: `{dotted(('job', *loc))}`: {err['msg']}"
            ),
            fix=_FIX_RECORD,
        ) from None
    if find(job.executor) is None:
        raise StepsError(
            "E-RUN-RECORD",
            f"the job record does not fit its format: `job.executor`: {job.executor!r} is not "
            f"a cluster backend ({', '.join(known())})",
            path=str(path) if path is not None else None,
            fix=_FIX_RECORD,
            exit_code=2,
        )
    return job


def read_job_run(run_dir: Path, root: Path | None = None) -> dict:
    """run.json of a cluster run, trusted and with a job that fits `JobRecord`."""
    refused = untrusted(run_dir, root)
    if refused is not None:
        raise refused
    data = read_record(run_dir)
    if not isinstance(data.get("job"), dict):
        raise StepsError(
            "E-RUN-NO-JOB",
            f"{run_dir} was not launched on a cluster (no job in run.json)",
            fix="name a run launched with --run/--batch (see `python -m steps jobs`)",
            exit_code=2,
        )
    return {**data, "job": job_of(data, run_dir).dump()}


@lru_cache(maxsize=32)
def _profile(path: str, stamp: tuple[int, int], name: str) -> Profile:
    from runners.launch.profiles.env_toml import load_profile

    return load_profile(Path(path), name)


def _env_file(data: dict, env: Mapping[str, str], cwd: Path) -> Path:
    """The env.toml the run was launched with while trusted, else the one `run` finds now."""
    from runners.launch.profiles.env_file import find_env_file

    launch = data.get("launch")
    recorded = launch.get("env_file") if isinstance(launch, dict) else None
    if isinstance(recorded, str) and recorded:
        path = Path(recorded)
        try:
            if path.is_file() and not (problem(path, False) or problem(path.parent, True)):
                return path
        except OSError:
            pass
    return find_env_file(None, env, cwd)


def _locate(
    data: dict, recorded: JobRecord, job: JobRecord, env: Mapping[str, str], cwd: Path
) -> JobRecord:
    """`job` located by its profile, when that is still where `recorded` says the job ran."""
    from runners.launch.backends import traits

    name, executor = job.profile, job.executor
    path = _env_file(data, env, cwd)
    st = path.stat()
    profile = _profile(str(path), (st.st_mtime_ns, st.st_size), str(name))
    backend = traits(executor)
    said = getattr(recorded, backend.located_by, None)
    now = getattr(profile, backend.located_by, None)
    if profile.executor != executor or said != now:
        was = f"{executor} on {said or 'this machine'}"
        raise StepsError(
            "E-RECORD-PROFILE",
            f"the job ran with profile [{name}] as {was}, but [{name}] in {path} is now "
            f"{profile.executor} on {now or 'this machine'}; not asking another cluster about "
            "its job id",
            path=str(path),
            fix=_FIX_LOCATE,
            exit_code=2,
        )
    return job.model_copy(update=backend.location(profile, job))


def locate(data: dict, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> dict:
    """run.json with its job located by its profile, else with why in `unlocated`."""
    env = os.environ if env is None else env
    recorded = job_of(data)
    job = job_of({"job": {k: v for k, v in data["job"].items() if k not in (*LOCATION, UNLOCATED)}})
    try:
        job = _locate(data, recorded, job, env, cwd or Path.cwd())
    except StepsError as exc:
        job.unlocated = Unlocated(message=exc.finding.message, fix=exc.finding.fix)
    return {**data, "job": job.dump()}


def located(job: JobRecord) -> JobRecord:
    """`job`, when its cluster is known; E-RECORD-PROFILE (exit 2) else."""
    why = job.unlocated
    if why is not None:
        raise StepsError(
            "E-RECORD-PROFILE",
            f"where job {job.job_id or '-'} runs is unknown: {why.message}",
            fix=why.fix or _FIX_LOCATE,
            exit_code=2,
        )
    return job


def shell_for(job: JobRecord, env: Mapping[str, str] | None = None) -> Shell:
    """Where a located job's commands run (E-RECORD-PROFILE when unlocated)."""
    from runners.launch.shell import Shell

    located(job)
    return Shell(job.host, list(job.ssh_options), env)


def backend_for_job(job: JobRecord, env: dict[str, str] | None = None) -> Backend:
    """The backend for a located job (only its location is set in its profile)."""
    from runners.launch.backends import traits
    from runners.launch.backends.base import RecordedProfile

    located(job)
    profile = RecordedProfile(
        job.executor, job.host, tuple(job.ssh_options), job.remote_dir or "/", job.address or ""
    )
    return traits(job.executor).implementation()(job.profile or "?", profile, env)
