"""Which backend runs a profile or a recorded job; each backend module is imported only here,
when it is chosen (a Slurm launch never imports Ray)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from runners.launch.request import Backend
from runners.rundir import JobRecord

if TYPE_CHECKING:
    from runners.launch.profiles import RayProfile, SlurmProfile


def backend_for(
    name: str,
    profile: SlurmProfile | RayProfile | RecordedProfile,
    env: dict[str, str] | None = None,
) -> Backend:
    """The backend a profile selects (its module is imported only now)."""
    if profile.executor == "slurm":
        from runners.launch.slurm import SlurmBackend

        return SlurmBackend(name, profile, env)
    if profile.executor == "ray":
        from runners.launch.ray_jobs import RayBackend

        return RayBackend(name, profile, env)
    raise ValueError(f"no cluster backend for executor {profile.executor!r}")


@dataclass(frozen=True)
class RecordedProfile:
    """What following, checking or cancelling a recorded job needs of its profile: where the
    job is, as runners/launch/records.py located it by its profile (never the record's own)."""

    executor: str
    host: str | None = None
    ssh_options: tuple[str, ...] = ()
    remote_dir: str = "/"
    address: str = ""


def backend_for_job(job: JobRecord, env: dict[str, str] | None = None) -> Backend:
    """The backend for a recorded job (run.json `job`, located by runners/launch/records.py)."""
    from runners.launch.records import located

    located(job)
    if job.executor == "slurm":
        profile = RecordedProfile("slurm", job.host, tuple(job.ssh_options), job.remote_dir or "/")
    else:
        profile = RecordedProfile("ray", address=job.address or "")
    return backend_for(job.profile or "?", profile, env)
