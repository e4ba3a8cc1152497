"""What crosses from `run` to a backend: the `LaunchRequest`, what preflight learnt of the cluster
(`RemoteFacts`), the `Backend` interface every executor implements, and the job states that end."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from catalog.errors import Finding
    from runners.launch.profiles.env_toml import RayProfile, SlurmProfile
    from runners.rundir import JobRecord

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
    "NOT_SUBMITTED",  # ours: the submission was refused and no job was queued
}
NOT_SUBMITTED = "NOT_SUBMITTED"
SUBMITTING = "SUBMITTING"  # recorded before submitting; Slurm's job id is not known yet
UNKNOWN = "UNKNOWN"  # shown (never saved) when the cluster cannot say: see `unknown`


def unknown(job: JobRecord, why: str) -> JobRecord:
    """A job record as shown when its state cannot be learnt: UNKNOWN, why, the last known."""
    return job.model_copy(update={"state": UNKNOWN, "last_known_state": job.state, "reason": why})


@dataclass
class LaunchRequest:
    """What to run, where its run dir is (here and as the job sees it), and with what env."""

    step_id: str
    runner: str  # the runner kind's name (runners.kinds)
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
    # sbatch --account/--partition: the profile's, else the cluster's default (probed).
    account: str | None = None
    partition: str | None = None
    # A batch script of ours that runs ray.sub inside the allocation (a chain's segment script),
    # with the sbatch flags it needs before the profile's own (the profile's win).
    batch_script: str | None = None
    sbatch_extra: list[str] = field(default_factory=list)
    # Jobs this one starts after, each ended well (a pipeline's earlier stages): Slurm
    # `--dependency=afterok`, and a failed one cancels this one (`--kill-on-invalid-dep=yes`).
    after: list[str] = field(default_factory=list)
    # A second job of the same run (the upstream judge: "-judge"), named apart from the main one.
    name_suffix: str = ""
    time_limit: str | None = None  # this job's own wall time (Slurm --time); None: the profile's


@dataclass
class RemoteFacts:
    """What preflight knows about the cluster side: the profile and what one probe saw there."""

    profile_name: str
    profile: SlurmProfile | RayProfile
    job_dir: str
    env_file: str = ""
    ray_program: bool = True  # the job is a Ray driver (ray.sub on Slurm), not a plain process
    exists: dict[str, bool] = field(default_factory=dict)  # path -> exists on the cluster
    home: str | None = None
    gres: str | None = None  # `sinfo -p PART -h -o %G`, None when not asked or not reachable
    partition: str | None = None  # the profile's, else the default (`scontrol show partition`)
    partitions_read: bool = False  # `scontrol show partition` answered (a default is knowable)
    partitions: list[str] | None = None  # every partition `scontrol -a` lists; None: not read
    account: str | None = None  # the profile's, else the default (`sacctmgr show user`)
    accounting: str | None = None  # AccountingStorageType; None when not asked
    node_cpus: int | None = None  # fewest CPUs of a node in the partition (`sinfo -o %c`)
    ray_sub_cpus: str | None = None  # ray.sub's CPUS_PER_WORKER default: "16" x GPUs | "node"
    python3: list[str] | None = None  # jobs' `python3` there: [version, path], or ["", why]
    ray_version: str | None = None
    cluster_gpus: float | None = None
    derived: int = 0  # input files rewritten into the run dir (they name the run dir's path)
    stage_problem: str | None = None  # why the run dir cannot be put under remote_dir
    stage_fix: str | None = None  # its fix, when not "a writable remote_dir"
    unreached: Finding | None = None  # E-REMOTE-HOST: the host did not answer, nothing seen

    @property
    def reached(self) -> bool:
        return self.unreached is None

    @property
    def host(self) -> str | None:
        return getattr(self.profile, "host", None)

    @property
    def has(self) -> frozenset[str]:
        """What the profile's backend has (runners.launch.backends.base.BACKEND_CAPABILITIES)."""
        from runners.launch.backends import traits

        return traits(self.profile.executor).has


class Backend(Protocol):
    """The interface `run` and the job commands use; one implementation per executor."""

    def job_dir(self, step_id: str, run_name: str, run_dir: Path) -> str: ...

    def probe(self, paths: list[str], script: str | None) -> RemoteFacts: ...

    def describe(self, request: LaunchRequest) -> dict: ...

    def job_record(self, request: LaunchRequest) -> JobRecord:
        """The job's record as run.json holds it before submitting (its name, no state yet)."""
        ...

    def refusals(
        self, request: LaunchRequest, files: Callable[[], Mapping[str, str]] | None = None
    ) -> list[Finding]:
        """What submit would refuse, as findings `run` reports before writing anything."""
        ...

    def submit(self, request: LaunchRequest, job: JobRecord) -> JobRecord:
        """Submit, completing `job` in place (also when raising: what is known is recorded)."""
        ...

    def refresh(self, job: JobRecord) -> JobRecord:
        """The live record (UNKNOWN with `reason` and `last_known_state` when none can say)."""
        ...

    def refresh_many(self, jobs: list[JobRecord]) -> list[JobRecord]: ...

    def follow(self, job: JobRecord, until_done: bool, follow: bool = True) -> int | None:
        """Print the log; the exit code when done; shell.LostContact before the job's end."""
        ...

    def cancel(self, job: JobRecord) -> str: ...

    # The upstream judge's CPU job before the GPU job (runners/run/judge.py).
    judge_gate: str  # how the GPU job waits for it, in words

    @property
    def judge_image(self) -> str | None:
        """Where the judge runs (the image), None where there is none to judge in."""
        ...

    def after_judge(self, judge: JobRecord, limit_s: float) -> list[str]:
        """The job ids the GPU job starts after (or wait here, at most `limit_s`)."""
        ...

    def log_tail(self, job: JobRecord, size: int) -> str | None:
        """The last `size` bytes of the job's log, None when there is none to read."""
        ...


def under(path: str, root: str) -> bool:
    """`path` is `root` or inside it (as strings: paths on the cluster need not exist here)."""
    root = root.rstrip("/") or "/"
    return root == "/" or path == root or path.startswith(root + "/")


def submitted_now() -> str:
    """UTC submission time to the microsecond: `last` is the newest even within a second."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
