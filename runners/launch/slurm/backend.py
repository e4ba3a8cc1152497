"""The Slurm backend: sbatch NeMo-RL's own `ray.sub`, or a plain srun job, here or over ssh.

ray.sub is submitted from the NeMo-RL checkout (its container workdir is SLURM_SUBMIT_DIR,
RL#1550) with its documented variables (COMMAND, CONTAINER, MOUNTS, GPUS_PER_NODE, BASE_LOG_DIR,
SETUP_COMMAND). Every job gets a unique --job-name (ray.sub's header has --dependency=singleton),
an explicit --time and --nodes, and an account/partition (its header holds placeholders). Secrets
travel through `job_secrets`, never the job's environment. run.json holds the job's record before
sbatch runs; after any sbatch failure the job is looked up by its name before anything is said.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from pathlib import Path

from catalog.errors import Finding, StepsError
from runners.launch import job_code, job_secrets
from runners.launch.request import (
    NOT_SUBMITTED,
    SUBMITTING,
    TERMINAL,
    LaunchRequest,
    RemoteFacts,
    submitted_now,
)
from runners.launch.shell import Shell, exports
from runners.launch.slurm import state as slurm_state
from runners.launch.slurm.probe import RAY_SUB, probe
from runners.rundir import JobRecord
from runners.secrets import SWITCH_VALUES

DRIVER_LOG = "ray-driver.log"


def parse_gres_gpus(gres: str) -> int | None:
    """GPUs per node in `sinfo -o %G` output (`gpu:8`, `gpu:a100:8(S:0-3)`); None when none."""
    for part in re.split(r",(?![^(]*\))", gres or ""):
        m = re.match(r"^gpu(?::[^:(]+)?:(\d+)", part.strip())
        if m:
            return int(m.group(1))
    return None


class SlurmBackend:
    """sbatch/squeue/sacct/scontrol/scancel through `bash -s`, locally or over ssh."""

    def __init__(self, name: str, profile, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.profile = profile
        self.env = dict(os.environ if env is None else env)
        self.shell = Shell(profile.host, list(profile.ssh_options), self.env)
        self.env_report: dict[str, bool] | None = None  # the login env over ssh, as probed

    def job_dir(self, step_id: str, run_name: str, run_dir: Path) -> str:
        return f"{self.profile.remote_dir.rstrip('/')}/{step_id}/{run_name}"

    def probe(self, paths: list[str], script: str | None) -> RemoteFacts:
        facts, self.env_report = probe(self.shell, self.name, self.profile, paths)
        return facts

    def _secrets_held(self, keep: set[str]) -> list[str]:
        """The submitting environment's secret-holding variables (over ssh: the login one's)."""
        if self.shell.host and self.env_report is None:
            got = self.shell.ask(
                {"op": "environment", "switches": sorted(SWITCH_VALUES)}, what="env names"
            )
            self.env_report = got["env"]
        report = self.env_report if self.shell.host else None
        return job_secrets.names_to_unset(self.env, report, keep)

    def refusals(self, req: LaunchRequest, files: object = None) -> list[Finding]:
        """Nothing beyond preflight: the probe already asked the cluster what submit needs."""
        return []

    def _batch_script(self, req: LaunchRequest) -> str:
        """The plain job: setup, then one srun of the command (in the container, if any). The
        secrets are read after setup, in a subshell that execs srun: setup never holds them."""
        p = self.profile
        srun = ["srun", "--ntasks=1"]
        if p.container_image:
            srun += [f"--container-image={p.container_image}", "--no-container-mount-home"]
            srun += [f"--container-workdir={req.cwd}"]
            if p.mounts:
                srun.append(f"--container-mounts={','.join(p.mounts)}")
        setup = f"{p.setup_command}\n" if p.setup_command else ""
        run = job_secrets.driver_command(req.job_dir, req.secret_names, [*srun, *req.command])
        return (
            "#!/bin/bash\n"
            "set -euo pipefail\n"
            "trap 'echo \"steps job exiting (exit_code=$?)\"' EXIT\n"
            f"cd {shlex.quote(req.cwd)}\n{setup}"
            f"( {run} )\n"
        )

    def sbatch_argv(self, req: LaunchRequest, job_name: str) -> list[str]:
        p = self.profile
        argv = ["sbatch", "--parsable", f"--job-name={job_name}", f"--nodes={req.nodes}"]
        argv += [f"--time={req.time_limit or p.time}", f"--output={req.job_dir}/slurm-%j.out"]
        argv.append("--export=ALL")
        account, partition = req.account or p.account, req.partition or p.partition
        if account:
            argv.append(f"--account={account}")
        if partition:
            argv.append(f"--partition={partition}")
        if p.gpus_per_node and req.gpus_per_node != 0:  # 0: a CPU-only kind (rl_prep)
            argv.append(f"--gres=gpu:{p.gpus_per_node}")
        if req.after:
            argv += [f"--dependency=afterok:{':'.join(req.after)}", "--kill-on-invalid-dep=yes"]
        argv += [*req.sbatch_extra, *p.sbatch_args]
        script = RAY_SUB if req.uses_ray_sub else f"{req.job_dir}/{self.script_name(req)}"
        argv.append(req.batch_script or script)
        return argv

    def job_env(self, req: LaunchRequest) -> dict[str, str]:
        """The plain variables the job gets (ray.sub's contract plus the profile's env)."""
        p = self.profile
        out: dict[str, str] = {}
        if req.uses_ray_sub:
            out["COMMAND"] = job_secrets.driver_command(req.job_dir, req.secret_names, req.command)
            out["CONTAINER"] = p.container_image or ""
            out["MOUNTS"] = ",".join(p.mounts)
            out["GPUS_PER_NODE"] = str(req.gpus_per_node or p.gpus_per_node or 8)
            out["BASE_LOG_DIR"] = req.job_dir
            if p.setup_command:
                out["SETUP_COMMAND"] = p.setup_command
        out.update(req.env)
        return out

    def submit_script(self, req: LaunchRequest, job_name: str, secrets: dict[str, str]) -> str:
        """Secrets into the run dir's 0600 file, every secret out of sbatch's environment."""
        cwd = req.cwd if req.uses_ray_sub else req.job_dir
        written = job_secrets.write_file(req.job_dir, secrets) if req.secret_names else ""
        env = self.job_env(req)
        sbatch = job_secrets.without(self._secrets_held(set(env)), self.sbatch_argv(req, job_name))
        return f"set -e\n{written}{exports(env)}cd {shlex.quote(cwd)}\nexec {sbatch}\n"

    def describe(self, req: LaunchRequest) -> dict:
        """The submission a dry run prints: sbatch argv, its cwd, COMMAND, env var NAMES."""
        env = self.job_env(req)
        return {
            "sbatch": self.sbatch_argv(req, self.job_name(req)),
            "submit_cwd": req.cwd if req.uses_ray_sub else req.job_dir,
            "command": env.get("COMMAND") or shlex.join(req.command),
            "env_names": sorted(env),
            "secret_names": sorted(req.secret_names),
            "job_dir": req.job_dir,
            "nodes": req.nodes,
        }

    @staticmethod
    def job_name(req: LaunchRequest) -> str:
        return f"steps-{req.step_id.rsplit('/', 1)[-1]}-{req.run_dir.name}{req.name_suffix}"

    @staticmethod
    def script_name(req: LaunchRequest) -> str:
        """The plain job's batch script in the run dir (the judge's: `job-judge.sbatch`)."""
        return f"job{req.name_suffix}.sbatch"

    def job_record(self, req: LaunchRequest) -> JobRecord:
        """The record before sbatch runs: the unique job name (a lost submission is found by
        it), no id yet."""
        log = f"{req.job_dir}/%j-logs/{DRIVER_LOG}" if req.uses_ray_sub else None
        job = JobRecord(
            executor="slurm",
            profile=self.name,
            host=self.profile.host,
            ssh_options=list(self.profile.ssh_options),
            remote_dir=self.profile.remote_dir,
            job_id=None,
            job_name=self.job_name(req),
            job_dir=req.job_dir,
            log_template=log or f"{req.job_dir}/slurm-%j.out",
            log_path=None,
            batch_output=None,
            submitted_utc=submitted_now(),
            state=SUBMITTING,
            exit_code=None,
        )
        if req.secret_names:
            job.secrets_file = job_secrets.secrets_path(req.job_dir)
        return job

    @staticmethod
    def _identified(job: JobRecord, job_id: str) -> JobRecord:
        """The record once Slurm gave the job its id (log paths follow from it)."""
        job.job_id = job_id
        if job.log_template:
            job.log_path = job.log_template.replace("%j", job_id)
            job.batch_output = f"{job.job_dir}/slurm-{job_id}.out"
        if job.state == SUBMITTING:
            job.state = "PENDING"
        return job

    def submit(self, req: LaunchRequest, job: JobRecord) -> JobRecord:
        """Stage the run dir and sbatch, completing `job` in place; after any sbatch failure
        the job is looked up by its name first (Slurm may have queued it anyway)."""
        if not req.uses_ray_sub:
            batch = req.run_dir / self.script_name(req)
            batch.write_text(self._batch_script(req), encoding="utf-8")
        try:  # our code, when the job runs it: one shared copy under remote_dir, linked
            code = job_code.ship(self.shell, req.run_dir, self.profile.remote_dir)
            links = {job_code.CODE: code} if code else None
            self.shell.copy_dir(req.run_dir, req.job_dir, links)
        except StepsError as exc:
            job.state, job.reason = NOT_SUBMITTED, exc.finding.message
            self._unstage(job)
            raise
        secrets = {n: self.env[n] for n in req.secret_names if n in self.env}
        secrets.update(req.config_secrets)
        script = self.submit_script(req, str(job.job_name), secrets)
        try:
            proc = self.shell.run(script, what="sbatch", bound="SUBMIT")
        except StepsError as exc:  # no answer in time or ssh failed: it may be queued
            return self._found_or_raise(job, exc.finding.message, answered=False)
        job_id = proc.stdout.strip().split(";")[0].splitlines()[-1:] if proc.stdout else []
        if proc.returncode == 0 and job_id and job_id[0].isdigit():
            return self._identified(job, job_id[0])
        said = (proc.stderr or proc.stdout).strip() or f"exit status {proc.returncode}"
        return self._found_or_raise(job, f"sbatch on {self.shell.where} refused the job: {said}")

    def _found_or_raise(self, job: JobRecord, failure: str, answered: bool = True) -> JobRecord:
        """After a failed sbatch: the job Slurm queued under our name anyway, else E-SUBMIT."""
        try:
            job_id, why = slurm_state.lookup(self.shell, str(job.job_name))
        except StepsError as exc:
            job_id, why = None, exc.finding.message
        if job_id:
            job.submit_note = f"{failure}; but Slurm queued it as job {job_id} (found by name)"
            return self._identified(job, job_id)
        if answered and why.startswith(f"Slurm on {self.shell.where} knows no job"):
            job.state, job.reason = NOT_SUBMITTED, failure
            self._unstage(job)
            fix = "check partition, account, --time and node counts in the profile"
        else:  # sbatch may still queue it: the record keeps the name, status looks again
            job.reason = f"{failure}; {why}"
            fix = (
                f"`python -m steps status RUN` looks the job up by its name ({job.job_name}) "
                "again; submit anew only if it is not found"
            )
        raise StepsError("E-SUBMIT", f"{failure} ({why})", fix=fix, exit_code=2)

    def _unstage(self, job: JobRecord) -> None:
        """Remove the staged run dir (and its secrets file) of a submission refused for certain."""
        job_dir, root = str(job.job_dir).rstrip("/"), self.profile.remote_dir.rstrip("/")
        if job_dir.startswith(root + "/"):
            with contextlib.suppress(StepsError):  # best effort: the host may be gone
                self.shell.run(f"rm -rf -- {shlex.quote(job_dir)}\n", what="rm")
        job.forget("secrets_file")

    @property
    def judge_image(self) -> str | None:
        """The profile's container image (none, no judge: the nodes' Python is the user's)."""
        return self.profile.container_image

    # What holds the GPU job until the judge passed, in words (the dry run shows it).
    judge_gate = "the GPU job's sbatch gets --dependency=afterok:JUDGE --kill-on-invalid-dep=yes"

    def after_judge(self, judge: JobRecord, limit_s: float) -> list[str]:
        """The judge: Slurm holds the GPU job until it passed (its --time bounds it)."""
        return [str(judge.job_id)]

    def log_tail(self, job: JobRecord, size: int) -> str | None:
        """The last `size` bytes of the job's log, None while it does not exist."""
        request = {"log": job.log_path, "ckpt": None, "tb": None, "log_tail": size, "tb_tail": 0}
        got = self.shell.ask({"op": "run", "progress": request}, what="reading a job's log")
        seen = got.get("progress") or {}
        if "log_size" not in seen:
            return None
        import base64

        return base64.b64decode(seen.get("log_tail", "")).decode("utf-8", "replace")

    def refresh_many(self, jobs: list[JobRecord]) -> list[JobRecord]:
        """Every job's current record in one round trip (unconfirmed ones found by name)."""
        out = slurm_state.refresh_many(self.shell, jobs)
        for job in out:
            self._forget_secrets(job)
        return [
            self._identified(new, new.job_id) if new.job_id and not old.job_id else new
            for old, new in zip(jobs, out, strict=True)
        ]

    def _forget_secrets(self, job: JobRecord) -> None:
        """A job that ended (or was cancelled) before its driver read the secrets file: rm it."""
        if job.state in TERMINAL and job.secrets_file:
            path = job.secrets_file
            job.forget("secrets_file")
            self.shell.run(job_secrets.remove_file(path), what="rm")

    def refresh(self, job: JobRecord) -> JobRecord:
        return self.refresh_many([job])[0]

    def follow(self, job: JobRecord, until_done: bool, follow: bool = True) -> int | None:
        code = slurm_state.follow(self.shell, job, until_done, follow)
        self._forget_secrets(job)
        return code

    def cancel(self, job: JobRecord) -> str:
        """scancel, under the Slurm-call bound (a silent controller makes it retry for long)."""
        call = f"{self.shell.seconds('SLURM_CALL'):g}"
        proc = self.shell.run(
            f"timeout {call} scancel {shlex.quote(str(job.job_id))}\n", what="scancel"
        )
        if proc.returncode != 0:
            said = proc.stderr.strip() or f"exit status {proc.returncode}"
            if proc.returncode == 124:
                said = f"scancel did not answer within {call} s"
            raise StepsError(
                "E-CANCEL",
                f"scancel {job.job_id} on {self.shell.where} failed: {said}",
                fix="check that Slurm answers there (`squeue`) and try again; "
                "`python -m steps status RUN` shows the job's state",
                exit_code=2,
            )
        if job.secrets_file:
            self.shell.run(job_secrets.remove_file(job.secrets_file), what="rm")
        return f"cancel requested for Slurm job {job.job_id}"
