"""The upstream judge on a Ray cluster: Ray Jobs know no dependency between jobs, so the judge (a
CPU-only job: entrypoint_num_cpus, no GPU) is waited for here, and the GPU job is submitted only
once it passed. `RayBackend` takes these methods; the Slurm backend has its own (afterok)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from runners.launch.request import TERMINAL, UNKNOWN
from runners.rundir import JobRecord

POLL_SECONDS = 0.5


class RayJudgeGate:
    """The judge's side of RayBackend: where it runs, how the GPU job waits, its log."""

    profile: Any
    judge_gate = "this process waits for it, then submits the GPU job only if it passed"

    refresh: Callable[[JobRecord], JobRecord]  # RayBackend's
    client: Callable[[], Any]

    @property
    def judge_image(self) -> str | None:
        """The Ray cluster's nodes run the image: the judge runs wherever the GPU job would."""
        return f"the Ray cluster at {self.profile.address}"

    def after_judge(self, judge: JobRecord, limit_s: float) -> list[str]:
        """Wait for the judge's end (`judge` updated in place); nothing for the GPU job to
        depend on. A judge still running after `limit_s` is stopped: the GPU job goes ahead
        (a judge that cannot finish is a warning, never an error)."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            now = self.refresh(judge)
            if now.state != UNKNOWN:
                for name in now.model_fields_set:
                    setattr(judge, name, getattr(now, name))
            if judge.state in TERMINAL:
                return []
            time.sleep(POLL_SECONDS)
        with contextlib.suppress(Exception):  # a courtesy: the GPU job goes ahead anyway
            self.client().stop_job(judge.job_id)
        judge.reason = f"no end within {limit_s:.0f} s: stopped, the GPU job went ahead"
        return []

    def log_tail(self, job: JobRecord, size: int) -> str | None:
        """The end of the job's log as Ray's dashboard keeps it (None when it cannot say)."""
        try:
            text = self.client().get_job_logs(job.job_id)
        except Exception:  # the dashboard's errors: no log to read
            return None
        return text[-size:] if isinstance(text, str) else None
