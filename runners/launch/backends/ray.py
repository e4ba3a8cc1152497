"""Ray Jobs: Ray's Job Submission API on a running cluster (runners/launch/ray_jobs.py)."""

from __future__ import annotations

from typing import Any

from runners.launch.backends.base import BackendTraits
from runners.launch.profiles import RayProfile
from runners.rundir import JobRecord


def _implementation() -> Any:
    from runners.launch.ray_jobs import RayBackend

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
        """The driver log as the dashboard keeps it (plain HTTP: no Ray SDK needed)."""
        import json
        import urllib.error
        import urllib.request

        from runners.launch.ray_sdk import auth_headers, refusal

        where = "driver log (Ray dashboard)"
        address = str(job.address).rstrip("/")
        url = f"{address}/api/jobs/{job.job_id}/logs"
        request = urllib.request.Request(url, headers=auth_headers(address))  # E-RAY-AUTH
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return where, json.loads(resp.read().decode("utf-8")).get("logs", "")
        except urllib.error.HTTPError as exc:
            if refused := refusal(exc.code, address):
                raise refused from None
        except (OSError, ValueError):
            pass
        return where, ""


BACKEND = Ray
