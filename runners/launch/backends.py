"""Which backend runs a profile or a recorded job; each backend module is imported only here,
when it is chosen (a Slurm launch never imports Ray)."""

from __future__ import annotations

from typing import Any

from runners.launch.request import Backend


def backend_for(name: str, profile: Any, env: dict[str, str] | None = None) -> Backend:
    """The backend a profile selects (its module is imported only now)."""
    if profile.executor == "slurm":
        from runners.launch.slurm import SlurmBackend

        return SlurmBackend(name, profile, env)
    if profile.executor == "ray":
        from runners.launch.ray_jobs import RayBackend

        return RayBackend(name, profile, env)
    raise ValueError(f"no cluster backend for executor {profile.executor!r}")


def backend_for_job(job: dict, env: dict[str, str] | None = None) -> Backend:
    """The backend for a recorded job (run.json `job`), without reading env.toml again."""
    from runners.launch.profiles import RayProfile, SlurmProfile

    if job["executor"] == "slurm":
        profile = SlurmProfile(
            executor="slurm",
            host=job.get("host"),
            ssh_options=job.get("ssh_options", []),
            remote_dir=job.get("remote_dir", "/"),
        )
    else:
        profile = RayProfile(executor="ray", address=job["address"])
    return backend_for(job.get("profile", "?"), profile, env)
