"""Slurm: sbatch NeMo-RL's ray.sub (or a plain srun job) here or over ssh
(runners/launch/slurm/backend.py)."""

from __future__ import annotations

from typing import Any

from runners.launch.backends.base import BackendTraits
from runners.launch.profiles.env_toml import SlurmProfile
from runners.rundir import JobRecord


def _implementation() -> Any:
    from runners.launch.slurm.backend import SlurmBackend

    return SlurmBackend


class Slurm(BackendTraits):
    name = "slurm"
    has = frozenset({"sbatch", "ray_sub", "container_mounts", "submit_shell_env"})
    title = "Slurm"
    chain = "batch"
    located_by = "host"
    log_is_file = True
    profile_model = SlurmProfile
    implementation = staticmethod(_implementation)

    @classmethod
    def location(cls, profile: Any, job: JobRecord) -> dict[str, Any]:
        update: dict[str, Any] = {
            "host": profile.host,
            "ssh_options": list(profile.ssh_options),
            "remote_dir": profile.remote_dir,
        }
        if job.secrets_file and job.job_dir:  # never a path the record chose
            from runners.launch.job_secrets import secrets_path

            update["secrets_file"] = secrets_path(job.job_dir)
        return update


BACKEND = Slurm
