"""Launch backends: `run` compiles and checks, then hands a `LaunchRequest` to a backend.

`local` execs on this machine (or runs rl_prep in-process); `slurm` submits NeMo-RL's own
`ray.sub` (or a plain srun job for steps that need no Ray cluster) with the system's sbatch, here
or over ssh; `ray` submits to an existing Ray cluster through Ray's Job Submission API. A backend
returns a job record that run.json keeps (`job`); `jobs`, `status`, `logs` and `cancel` read it
and ask the same backend. Nothing here imports Ray unless a Ray profile is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

NO_RAY_STEPS = ("rl_prep", "megatron_to_hf")  # plain sbatch + srun jobs, no ray.sub
TERMINAL = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "SUCCEEDED",
    "STOPPED",
}


@dataclass
class LaunchRequest:
    """What to run, where its run dir is (here and as the job sees it), and with what env."""

    step_id: str
    runner: str  # nemo_rl | rl_prep | megatron_to_hf
    run_dir: Path  # written here
    job_dir: str  # the same folder as the job sees it
    command: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)  # plain values
    secret_names: list[str] = field(default_factory=list)
    # Literal secrets lifted out of the config (`${oc.env:STEPS_SECRET_*}`): values, never printed.
    config_secrets: dict[str, str] = field(default_factory=dict)
    nodes: int = 1
    gpus_per_node: int | None = None
    uses_ray_sub: bool = False


@dataclass
class RemoteFacts:
    """What preflight knows about the cluster side: the profile and what one probe saw there."""

    profile_name: str
    profile: Any  # SlurmProfile | RayProfile
    job_dir: str
    env_file: str = ""
    exists: dict[str, bool] = field(default_factory=dict)  # path -> exists on the cluster
    home: str | None = None
    gres: str | None = None  # `sinfo -p PART -h -o %G`, None when not asked or not reachable
    ray_version: str | None = None
    cluster_gpus: float | None = None
    derived: int = 0  # input files rewritten into the run dir (they name the run dir's path)

    @property
    def host(self) -> str | None:
        return getattr(self.profile, "host", None)


class Backend(Protocol):
    """The interface `run` and the job commands use; one implementation per executor."""

    def job_dir(self, step_id: str, run_name: str, run_dir: Path) -> str: ...

    def probe(self, paths: list[str], script: str | None) -> RemoteFacts: ...

    def describe(self, request: LaunchRequest) -> dict: ...

    def submit(self, request: LaunchRequest) -> dict: ...

    def refresh(self, job: dict) -> dict: ...

    def follow(self, job: dict, until_done: bool) -> int | None: ...

    def cancel(self, job: dict) -> str: ...


def submitted_now() -> str:
    """UTC submission time to the microsecond: `last` is the newest even within a second."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
