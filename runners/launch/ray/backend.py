"""The Ray backend: submit to an existing Ray cluster through Ray's Job Submission API.

The run dir is under `remote_dir` (shared storage) or uploaded as the job's working_dir (at most
100 MiB, Ray's dashboard limit). Plain env values are `export`ed in the entrypoint, never
`runtime_env.env_vars`: NeMo-RL's `init_ray` passes its own and Ray refuses to merge the two.
Secrets never travel: the job reads them from the cluster's environment and stops at once,
naming one that is missing.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from catalog.errors import Finding, StepsError
from runners.launch.ray import sdk
from runners.launch.request import (
    NOT_SUBMITTED,
    SUBMITTING,
    TERMINAL,
    UNKNOWN,
    LaunchRequest,
    RemoteFacts,
    submitted_now,
    under,
    unknown,
)
from runners.launch.shell import LostContact, Shell, seconds
from runners.rundir import JobRecord

UPLOAD_DIR = "$STEPS_RUN_DIR"  # where the uploaded run dir is, inside the job's entrypoint
MAX_UPLOAD = 100 * 1024 * 1024


def _quote(arg: str) -> str:
    """Shell-quote, letting $STEPS_RUN_DIR expand (the only variable we put in arguments)."""
    if UPLOAD_DIR in arg and all(c not in arg for c in '"`\\'):
        return f'"{arg}"'
    return shlex.quote(arg)


def _update(job: JobRecord, now: JobRecord) -> None:
    for name in now.model_fields_set:
        setattr(job, name, getattr(now, name))


class RayBackend:
    """JobSubmissionClient for submit/status/logs/stop; the stdlib for the dry-run probe."""

    def __init__(self, name: str, profile: Any, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.profile = profile
        self.address = profile.address.rstrip("/")
        self._client: Any = None

    def client(self) -> Any:
        """Ray's JobSubmissionClient, bounded and with the cluster's token (see sdk.py)."""
        if self._client is None:
            self._client = sdk.client(self.address, seconds("COMMAND"))
        return self._client

    def _get(self, path: str) -> Any:
        try:
            return sdk.dashboard_get(self.address, path)
        except (OSError, ValueError) as exc:  # an HTTP error says its status, others why
            detail = exc if hasattr(exc, "code") else getattr(exc, "reason", exc)
            raise sdk.unreachable(self.address, str(detail)) from None

    def job_dir(self, step_id: str, run_name: str, run_dir: Path) -> str:
        if self.profile.remote_dir:
            return f"{self.profile.remote_dir.rstrip('/')}/{step_id}/{run_name}"
        return UPLOAD_DIR

    def probe(self, paths: list[str], script: str | None) -> RemoteFacts:
        """The SDK is here, the dashboard's Ray version and alive GPUs, remote_dir's stage."""
        missing = sdk.sdk_missing()
        if missing:
            raise sdk.sdk_error(missing)
        facts = RemoteFacts(self.name, self.profile, "")
        facts.stage_problem = self.stage_problem()
        facts.ray_version = self._get("/api/version").get("ray_version")
        try:
            nodes = self._get("/api/v0/nodes")["data"]["result"]["result"]
            alive = [n for n in nodes if n.get("state") == "ALIVE"]
            facts.cluster_gpus = sum(float(n["resources_total"].get("GPU", 0)) for n in alive)
        except (KeyError, TypeError, StepsError):
            facts.cluster_gpus = None
        return facts

    def stage_problem(self) -> str | None:
        """Why the run dir cannot be copied into remote_dir from here (the shared folder must
        be mounted here, else the copy lands on this disk unseen), or None."""
        remote = self.profile.remote_dir
        if not remote:
            return None
        roots = [d for d in self.profile.shared() if under(remote, d)]
        root = min(roots, key=len, default=remote)  # the outermost: the mount itself
        if not os.path.isdir(root):
            return (
                f"{root} is not a folder on this machine: the run dir is copied into remote_dir "
                "from here, so the cluster's shared storage must be mounted here at that path"
            )
        folder = Path(remote)
        while not folder.exists():
            folder = folder.parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            return f"{folder} is not a writable folder on this machine"
        return None

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
        return f"steps-{req.step_id.rsplit('/', 1)[-1]}-{req.run_dir.name}{req.name_suffix}".lower()

    def _resources(self, req: LaunchRequest) -> dict[str, Any]:
        """The profile's; a CPU-only job (the judge, data prep): no GPU, 1 CPU unless said."""
        p, cpu_only = self.profile, req.gpus_per_node == 0
        out: dict[str, Any] = {}
        if p.entrypoint_num_cpus is not None or cpu_only:
            cpus = p.entrypoint_num_cpus
            out["entrypoint_num_cpus"] = 1 if cpus is None else cpus
        if p.entrypoint_num_gpus is not None and not cpu_only:
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
            **self._resources(req),
        }

    def refusals(
        self, req: LaunchRequest, files: Callable[[], Mapping[str, str]] | None = None
    ) -> list[Finding]:
        """What submit would refuse; `files` renders the run dir, else the written one counts."""
        out = []
        if req.config_secrets:
            out.append(
                Finding(
                    "E-REMOTE-SECRET-INLINE",
                    "the config holds a literal secret (carried as "
                    f"{', '.join(sorted(req.config_secrets))}); a Ray job cannot receive secret "
                    "values from here",
                    fix="set the secret in the Ray cluster's environment and refer to it as "
                    "${oc.env:NAME} in the config",
                )
            )
        if req.job_dir == UPLOAD_DIR:
            if files is not None:
                size = sum(len(text.encode()) for text in files().values())
            else:
                size = sum(p.stat().st_size for p in req.run_dir.rglob("*") if p.is_file())
            if size > MAX_UPLOAD:
                out.append(
                    Finding(
                        "E-REMOTE-PATH",
                        f"the run dir is {size / 2**20:.1f} MiB; Ray uploads at most 100 MiB as "
                        "a job's working_dir",
                        path=str(req.run_dir),
                        fix="set remote_dir in the profile to shared storage the cluster sees",
                    )
                )
        return out

    def job_record(self, req: LaunchRequest) -> JobRecord:
        """The record before submitting: the submission id is ours, so it is the job id now."""
        sid = self.submission_id(req)
        return JobRecord(
            executor="ray",
            profile=self.name,
            address=self.address,
            job_id=sid,
            job_dir=req.job_dir,
            log_path=f"ray job logs {sid} (address {self.address})",
            submitted_utc=submitted_now(),
            state=SUBMITTING,
            exit_code=None,
        )

    def submit(self, req: LaunchRequest, job: JobRecord) -> JobRecord:
        """Submit under our submission id; after any failure, ask Ray for that id first."""
        refused = self.refusals(req)  # `run` reported these before writing: a guard for callers
        if refused:
            f = refused[0]
            job.state, job.reason = NOT_SUBMITTED, f.message
            raise StepsError(f.code, f.message, path=f.path, fix=f.fix)
        upload = req.job_dir == UPLOAD_DIR
        try:  # uploaded with the job (its size is one of the refusals), else copied from here
            if not upload:
                Shell().copy_dir(req.run_dir, req.job_dir)
        except StepsError as exc:
            job.state, job.reason = NOT_SUBMITTED, exc.finding.message
            raise
        client = self.client()
        sid = str(job.job_id)
        runtime_env = {"working_dir": str(req.run_dir)} if upload else None
        client.timeout = seconds("SUBMIT")
        try:
            for attempt in range(20):
                try:
                    client.submit_job(
                        entrypoint=self.entrypoint(req),
                        submission_id=sid,
                        runtime_env=runtime_env,
                        metadata={"steps_step": req.step_id, "steps_run": req.run_dir.name},
                        **self._resources(req),
                    )
                    job.state = "PENDING"
                    return job
                except RuntimeError as exc:
                    # A head that just started has no job agent yet: Ray says to try again.
                    if "try again" in str(exc) and attempt < 19 and not self._known(sid):
                        time.sleep(0.5)
                        continue
                    first = str(exc).splitlines()[0]
                    return self._found_or_raise(job, f"the Ray cluster refused the job: {first}")
                except StepsError:  # E-RAY-AUTH: the dashboard refused us, nothing was queued
                    job.state = NOT_SUBMITTED
                    raise
                except Exception as exc:  # requests' Timeout/ConnectionError: it may be queued
                    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    failure = f"the Ray dashboard at {self.address} did not answer the submission"
                    return self._found_or_raise(job, f"{failure} ({detail})", answered=False)
        finally:
            client.timeout = seconds("COMMAND")
        return job  # pragma: no cover - the loop returns or raises

    def _known(self, sid: str) -> bool | None:
        """Whether Ray holds submission `sid` (None when it cannot be asked)."""
        try:
            self.client().get_job_info(sid)
            return True
        except RuntimeError as exc:
            return False if "does not exist" in str(exc) else None
        except Exception:
            return None

    def _found_or_raise(self, job: JobRecord, failure: str, answered: bool = True) -> JobRecord:
        """After a failed submit: the job Ray holds under our id anyway, else E-SUBMIT."""
        known = self._known(str(job.job_id))
        if known:
            job.state = "PENDING"
            job.submit_note = f"{failure}; but Ray holds the job under its id (found)"
            return job
        if known is False and answered:
            job.state, job.reason = NOT_SUBMITTED, failure
            fix = "check the profile's entrypoint resources and the cluster's state"
        else:
            job.reason = f"{failure}; whether Ray holds it is unknown"
            fix = (
                f"`python -m steps status RUN` asks Ray for {job.job_id} again; submit anew "
                "only if it is not found"
            )
        raise StepsError("E-SUBMIT", failure, fix=fix, exit_code=2)

    def refresh_many(self, jobs: list[JobRecord]) -> list[JobRecord]:
        return [self.refresh(job) for job in jobs]

    def refresh(self, job: JobRecord) -> JobRecord:
        try:
            info = self.client().get_job_info(job.job_id)
        except StepsError as exc:
            return unknown(job, exc.finding.message)
        except RuntimeError as exc:
            if job.state == SUBMITTING and "does not exist" in str(exc):
                return job.model_copy(update={"reason": f"Ray holds no job {job.job_id}"})
            return unknown(job, str(exc).splitlines()[0])
        except Exception as exc:  # requests' ConnectionError/Timeout
            return unknown(job, f"the Ray dashboard at {self.address}: {exc}".splitlines()[0])
        state = str(getattr(info.status, "value", info.status))
        code = info.driver_exit_code
        if state == "SUCCEEDED":
            code = 0
        elif state in ("FAILED", "STOPPED"):
            code = code if code not in (None, 0) else 1
        else:
            code = None
        return job.model_copy(update={"state": state, "exit_code": code, "message": info.message})

    def follow(self, job: JobRecord, until_done: bool, follow: bool = True) -> int | None:
        """Print the job's log; a stream that breaks, or ends before the job, is LostContact."""
        client = self.client()
        where = f"the Ray dashboard at {self.address}"
        try:
            if not follow:
                sys.stdout.write(client.get_job_logs(job.job_id))
                sys.stdout.flush()
                return None
            import asyncio

            async def tail() -> None:
                async for chunk in client.tail_job_logs(job.job_id):
                    sys.stdout.write(chunk)
                    sys.stdout.flush()

            asyncio.run(tail())
        except Exception as exc:
            raise LostContact(where, str(exc).splitlines()[0] or type(exc).__name__) from None
        for _ in range(100):  # the log stream ends a moment before the status settles
            _update(job, self.refresh(job))  # the caller's record too
            if job.state == UNKNOWN:
                raise LostContact(where, job.reason or "no answer")
            if job.exit_code is not None:
                return job.exit_code
            time.sleep(0.2)
        raise LostContact(where, f"the log stream ended while the job is {job.state}")

    # Ray Jobs know no dependency between jobs: the upstream judge is waited for here.
    judge_gate = "this process waits for it, then submits the GPU job only if it passed"

    @property
    def judge_image(self) -> str | None:
        """The Ray cluster's nodes run the image: the judge runs wherever the GPU job would."""
        return f"the Ray cluster at {self.profile.address}"

    def after_judge(self, judge: JobRecord, limit_s: float) -> list[str]:
        """Wait for the judge's end (updated in place); one still running after `limit_s` is
        stopped and the GPU job goes ahead (a warning, never an error)."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            now = self.refresh(judge)
            if now.state != UNKNOWN:
                _update(judge, now)
            if judge.state in TERMINAL:
                return []
            time.sleep(0.5)
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

    def cancel(self, job: JobRecord) -> str:
        stopped = self.client().stop_job(job.job_id)
        if stopped:
            return f"stop requested for Ray job {job.job_id}"
        return f"Ray job {job.job_id} was not running (nothing to stop)"
