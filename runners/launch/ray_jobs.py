"""The Ray backend: submit to an existing Ray cluster through Ray's Job Submission API.

The entrypoint runs the command a local run would exec, from `nemo_rl_dir`, on the run dir's
config.yaml: under `remote_dir` (shared storage the cluster sees) or, without one, the run dir
uploaded as the job's working_dir (at most 100 MiB, Ray's dashboard limit). Plain env values are
`export`ed in the entrypoint, never `runtime_env.env_vars`: NeMo-RL's `init_ray` passes its own
env_vars and Ray refuses to merge the two. Secrets never travel: the job reads them from the
cluster's own environment, and the entrypoint stops at once, naming the variable, when one is
missing. The profile's `address` wins over RAY_ADDRESS/RAY_API_SERVER_ADDRESS, which Ray's client
would otherwise prefer. `ray` is imported only here (the `ray` extra).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from catalog.errors import StepsError
from runners.launch.request import LaunchRequest, RemoteFacts, submitted_now

UPLOAD_DIR = "$STEPS_RUN_DIR"  # where the uploaded run dir is, inside the job's entrypoint
MAX_UPLOAD = 100 * 1024 * 1024
ADDRESS_VARS = ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")


def _quote(arg: str) -> str:
    """Shell-quote, letting $STEPS_RUN_DIR expand (the only variable we put in arguments)."""
    if UPLOAD_DIR in arg and all(c not in arg for c in '"`\\'):
        return f'"{arg}"'
    return shlex.quote(arg)


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@contextmanager
def _profile_address_only():
    """Hide RAY_ADDRESS/RAY_API_SERVER_ADDRESS while the client resolves its address."""
    saved = {k: os.environ.pop(k) for k in ADDRESS_VARS if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


class RayBackend:
    """JobSubmissionClient for submit/status/logs/stop; the stdlib for the dry-run probe."""

    def __init__(self, name: str, profile: Any, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.profile = profile
        self.address = profile.address.rstrip("/")
        self._client: Any = None

    def client(self) -> Any:
        if self._client is not None:
            return self._client
        try:
            import logging

            from ray.job_submission import JobSubmissionClient

            for name in ("ray", "ray.dashboard.modules.job.sdk"):
                logging.getLogger(name).setLevel(logging.WARNING)
        except ImportError:
            raise StepsError(
                "E-RAY-MISSING",
                "Ray's Job Submission SDK is not installed",
                fix="pip install 'nemo-rl-steps[ray]' (ray[default])",
                exit_code=2,
            ) from None
        try:
            with _profile_address_only():
                self._client = JobSubmissionClient(self.address)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise self._unreachable(str(exc).splitlines()[0]) from None
        return self._client

    def _unreachable(self, detail: str) -> StepsError:
        return StepsError(
            "E-REMOTE-HOST",
            f"cannot reach the Ray dashboard at {self.address}: {detail}",
            fix="check the profile's address (the dashboard URL, port 8265 by default), that the "
            "cluster is up, and any port-forward or VPN",
            exit_code=2,
        )

    def _get(self, path: str) -> Any:
        try:
            with urllib.request.urlopen(f"{self.address}{path}", timeout=10) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise self._unreachable(str(getattr(exc, "reason", exc))) from None

    def job_dir(self, step_id: str, run_name: str, run_dir: Path) -> str:
        if self.profile.remote_dir:
            return f"{self.profile.remote_dir.rstrip('/')}/{step_id}/{run_name}"
        return UPLOAD_DIR

    def probe(self, paths: list[str], script: str | None) -> RemoteFacts:
        """The dashboard answers; its Ray version and the GPUs its alive nodes report."""
        facts = RemoteFacts(self.name, self.profile, "")
        facts.ray_version = self._get("/api/version").get("ray_version")
        try:
            nodes = self._get("/api/v0/nodes")["data"]["result"]["result"]
            alive = [n for n in nodes if n.get("state") == "ALIVE"]
            facts.cluster_gpus = sum(float(n["resources_total"].get("GPU", 0)) for n in alive)
        except (KeyError, TypeError, StepsError):
            facts.cluster_gpus = None
        return facts

    def entrypoint(self, req: LaunchRequest) -> str:
        lines = []
        if req.job_dir == UPLOAD_DIR:
            lines.append('STEPS_RUN_DIR="$PWD"')
        for name in req.secret_names:
            lines.append(
                f'[ -n "${{{name}:-}}" ] || {{ echo "steps: secret {name} is not set in the Ray '
                f'cluster environment (the job reads secrets from there)" >&2; exit 2; }}'
            )
        lines += [f"export {k}={shlex.quote(v)}" for k, v in req.env.items()]
        lines.append(f"cd {_quote(req.cwd)}")
        lines.append("exec " + " ".join(_quote(a) for a in req.command))
        return "\n".join(lines)

    def submission_id(self, req: LaunchRequest) -> str:
        return f"steps-{req.step_id.rsplit('/', 1)[-1]}-{req.run_dir.name}".lower()

    def _resources(self) -> dict[str, Any]:
        p = self.profile
        out: dict[str, Any] = {}
        if p.entrypoint_num_cpus is not None:
            out["entrypoint_num_cpus"] = p.entrypoint_num_cpus
        if p.entrypoint_num_gpus is not None:
            out["entrypoint_num_gpus"] = p.entrypoint_num_gpus
        if p.entrypoint_resources:
            out["entrypoint_resources"] = dict(p.entrypoint_resources)
        return out

    def describe(self, req: LaunchRequest) -> dict:
        return {
            "address": self.address,
            "entrypoint": self.entrypoint(req),
            "submission_id": self.submission_id(req),
            "working_dir": "upload of the run dir" if req.job_dir == UPLOAD_DIR else None,
            "env_names": sorted(req.env),
            "secret_names": sorted(req.secret_names),
            "job_dir": req.job_dir,
            **self._resources(),
        }

    def submit(self, req: LaunchRequest) -> dict:
        if req.config_secrets:
            raise StepsError(
                "E-REMOTE-SECRET-INLINE",
                f"the config holds a literal secret ({', '.join(sorted(req.config_secrets))} "
                "would carry it); a Ray job cannot receive secret values from here",
                fix="set the secret in the Ray cluster's environment and refer to it as "
                "${oc.env:NAME} in the config",
            )
        upload = req.job_dir == UPLOAD_DIR
        if upload:
            size = dir_bytes(req.run_dir)
            if size > MAX_UPLOAD:
                raise StepsError(
                    "E-REMOTE-PATH",
                    f"the run dir is {size / 2**20:.1f} MiB; Ray uploads at most 100 MiB as a "
                    "job's working_dir",
                    path=str(req.run_dir),
                    fix="set remote_dir in the profile to shared storage the cluster sees",
                )
        else:
            dest = Path(req.job_dir)
            dest.parent.mkdir(parents=True, exist_ok=True)
            import shutil

            shutil.copytree(req.run_dir, dest, dirs_exist_ok=True)
        sid = self.submission_id(req)
        runtime_env = {"working_dir": str(req.run_dir)} if upload else None
        for attempt in range(20):
            try:
                self._answered(
                    lambda: self.client().submit_job(
                        entrypoint=self.entrypoint(req),
                        submission_id=sid,
                        runtime_env=runtime_env,
                        metadata={"steps_step": req.step_id, "steps_run": req.run_dir.name},
                        **self._resources(),
                    )
                )
                break
            except RuntimeError as exc:
                # A head that just started has no job agent yet: Ray says to try again.
                if "try again" in str(exc) and attempt < 19:
                    time.sleep(0.5)
                    continue
                raise self._refused(exc) from None
        return {
            "executor": "ray",
            "profile": self.name,
            "address": self.address,
            "job_id": sid,
            "job_dir": req.job_dir,
            "log_path": f"ray job logs {sid} (address {self.address})",
            "submitted_utc": submitted_now(),
            "state": "PENDING",
            "exit_code": None,
        }

    def _answered(self, call: Any, seconds: float = 120) -> Any:
        """`call()` or E-SUBMIT: Ray's client has no timeout, and a dashboard whose job agent
        never started keeps a submit waiting forever."""
        import concurrent.futures

        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        try:
            return pool.submit(call).result(timeout=seconds)
        except concurrent.futures.TimeoutError:
            raise StepsError(
                "E-SUBMIT",
                f"the Ray dashboard at {self.address} did not answer the submission within "
                f"{seconds:.0f} s",
                fix="check the cluster's dashboard agent (dashboard_agent.log on the head)",
                exit_code=2,
            ) from None
        finally:
            pool.shutdown(wait=False)

    @staticmethod
    def _refused(exc: Exception) -> StepsError:
        return StepsError(
            "E-SUBMIT",
            f"the Ray cluster refused the job: {str(exc).splitlines()[0]}",
            fix="check the profile's entrypoint resources and the cluster's state",
            exit_code=2,
        )

    def refresh(self, job: dict) -> dict:
        info = self.client().get_job_info(job["job_id"])
        state = str(getattr(info.status, "value", info.status))
        code = info.driver_exit_code
        if state == "SUCCEEDED":
            code = 0
        elif state in ("FAILED", "STOPPED"):
            code = code if code not in (None, 0) else 1
        else:
            code = None
        return {**job, "state": state, "exit_code": code, "message": info.message}

    def follow(self, job: dict, until_done: bool, follow: bool = True) -> int | None:
        client = self.client()
        if not follow:
            sys.stdout.write(client.get_job_logs(job["job_id"]))
            sys.stdout.flush()
            return None
        import asyncio

        async def tail() -> None:
            async for chunk in client.tail_job_logs(job["job_id"]):
                sys.stdout.write(chunk)
                sys.stdout.flush()

        asyncio.run(tail())
        for _ in range(100):  # the log stream ends a moment before the status settles
            job.update(self.refresh(job))
            if job["exit_code"] is not None:
                break
            time.sleep(0.2)
        return job["exit_code"]

    def cancel(self, job: dict) -> str:
        stopped = self.client().stop_job(job["job_id"])
        if stopped:
            return f"stop requested for Ray job {job['job_id']}"
        return f"Ray job {job['job_id']} was not running (nothing to stop)"
