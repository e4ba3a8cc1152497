"""What every cluster backend declares: the decisions on which executors differ.

There are no defaults: `check` (runners/check/capabilities.py) fails on a backend module whose
`BACKEND` leaves one of `DECISIONS` unset, or names a capability `BACKEND_CAPABILITIES` lacks,
so a new backend is judged by every remote preflight rule that applies to it or refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from runners.rundir import JobRecord

# What a backend may have: remote preflight rules say which they need (`rule(on=...)`), and the
# launch, chain and job commands ask for them instead of naming an executor.
BACKEND_CAPABILITIES: dict[str, str] = {
    "sbatch": "jobs are queued with sbatch in a partition and account; the scheduler's facts "
    "(scontrol, sacct) are read on the cluster host",
    "ray_sub": "a Ray program runs through NeMo-RL's ray.sub in the allocation: nodes, GRES, "
    "CPUs per Ray node, a pyxis container, the driver log ray.sub writes",
    "container_mounts": "the job sees only the folders its container mounts",
    "submit_shell_env": "the job's environment, secrets included, is exported from the shell "
    "that submits (else it is the cluster's own)",
    "ray_cluster": "jobs go to a running Ray cluster, whose GPUs and Ray version are read",
    "upload": "the run dir may be uploaded with the job instead of staged under remote_dir",
}

# Every backend sets each of these on its own class (`check` says which one is missing).
DECISIONS: dict[str, str] = {
    "has": "frozenset of BACKEND_CAPABILITIES (frozenset() for none)",
    "title": 'how messages name it ("Slurm")',
    "chain": '"batch": a segment script chains the jobs on the cluster (--batch); "attached": '
    "this process drives each segment (--run)",
    "located_by": 'the profile key that says which cluster ran a recorded job ("host", "address")',
    "log_is_file": "the job's log is a file on the cluster host (else the cluster keeps it)",
    "profile_model": "the pydantic model of its env.toml profiles",
    "implementation": "a function returning the Backend class (imported only then)",
}


class BackendTraits:
    """A backend's declarations (set on the subclass a backend module exports as `BACKEND`)."""

    name: ClassVar[str]
    has: ClassVar[frozenset[str]]
    title: ClassVar[str]
    chain: ClassVar[Literal["batch", "attached"]]
    located_by: ClassVar[str]
    log_is_file: ClassVar[bool]
    profile_model: ClassVar[type]
    implementation: ClassVar[Callable[[], Callable[..., Any]]]  # the Backend class

    @classmethod
    def location(cls, profile: Any, job: JobRecord) -> dict[str, Any]:
        """Where a recorded job runs, as its profile says now (the record's own is never used)."""
        return {cls.located_by: getattr(profile, cls.located_by, None)}

    @classmethod
    def kept_log(cls, job: JobRecord) -> tuple[str, str]:
        """(where, text) of the log the cluster keeps when it is no file; empty when none."""
        return f"{cls.title} job log", ""


@dataclass(frozen=True)
class RecordedProfile:
    """Where a recorded job is, as records.py located it by its profile (never the record)."""

    executor: str
    host: str | None = None
    ssh_options: tuple[str, ...] = ()
    remote_dir: str = "/"
    address: str = ""
