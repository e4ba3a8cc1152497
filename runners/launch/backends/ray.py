"""Ray Jobs: Ray's Job Submission API on a running cluster (runners/launch/ray/backend.py)."""

from __future__ import annotations

from typing import Any

from runners.launch.backends.base import BackendTraits
from runners.launch.profiles.env_toml import RayProfile
from runners.rundir import JobRecord


def _implementation() -> Any:
    from runners.launch.ray.backend import RayBackend

    return RayBackend


class Ray(BackendTraits):
    name = "ray"
    has = frozenset({"ray_cluster", "upload"})
    title = "Ray"
    chain = "attached"  # a Ray cluster has no queue to keep the next segment in
    located_by = "address"
    log_is_file = False  # the dashboard keeps the driver log
    profile_model = RayProfile
    implementation = staticmethod(_implementation)

    @classmethod
    def kept_log(cls, job: JobRecord) -> tuple[str, str]:
        from runners.launch.ray.sdk import dashboard_logs

        return "driver log (Ray dashboard)", dashboard_logs(str(job.address), str(job.job_id))


BACKEND = Ray
