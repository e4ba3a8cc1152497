"""The Slurm backend: sbatch NeMo-RL's own `ray.sub`, or a plain srun job, here or over ssh.

ray.sub is submitted from the NeMo-RL checkout (it uses SLURM_SUBMIT_DIR as the container
workdir, RL#1550) with its documented variables: COMMAND (runs the validated config.yaml from the
run dir), CONTAINER, MOUNTS, GPUS_PER_NODE, BASE_LOG_DIR (the run dir: logs land in
`<jobid>-logs/`), SETUP_COMMAND. Every run gets a unique --job-name (ray.sub's header has
--dependency=singleton), an explicit --time and --nodes from the config. Secrets reach the job
by name through sbatch's environment; the submit script carries their values on stdin, and
secret-named variables the profile does not forward are unset before sbatch.

A job's state comes from `scontrol show job` while slurmctld still holds the job, else `sacct`
(accounting keeps it after MinJobAge), else the exit line ray.sub (or our srun script) prints into
the batch output.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from catalog.errors import StepsError
from runners.launch.request import TERMINAL, LaunchRequest, RemoteFacts, submitted_now
from runners.launch.shell import Shell, exports
from runners.secrets import SECRET_WORDS

RAY_SUB = "ray.sub"
DRIVER_LOG = "ray-driver.log"
END_MARK = "@@steps-job-end@@"
STATE_MARK = "@@steps-job-state@@"
# Secret-looking variable names (the words of runners.secrets) as a bash `case` pattern.
_SECRET_GLOB = "|".join(f"*{w.upper()}*" for w in sorted(SECRET_WORDS))

# Prints "STATE EXIT" for job $ID: scontrol while slurmctld knows the job (live; sacct lags it by
# the slurmdbd round trip, a started job still reads PENDING there), else sacct's latest record
# (a requeued job has one per run), else the batch output's exit line.
_STATE_FN = r"""
job_state() {
  local line st ec
  line=$(scontrol show job "$ID" -o 2>/dev/null | head -n 1) || line=""
  if [ -n "$line" ]; then
    st=$(printf '%s' "$line" | grep -o 'JobState=[A-Z_]*' | head -n 1); st=${st#JobState=}
    ec=$(printf '%s' "$line" | grep -o ' ExitCode=[0-9:]*' | head -n 1); ec=${ec# ExitCode=}
    echo "$st $ec"; return
  fi
  line=$(sacct -n -P -X -o State,ExitCode -j "$ID" 2>/dev/null | tail -n 1) || line=""
  if [ -n "$line" ]; then st=${line%%|*}; ec=${line##*|}; echo "${st%% *} $ec"; return; fi
  ec=$(grep -ho 'exit_code=[0-9]*' "$OUT" 2>/dev/null | tail -n 1) || ec=""
  if [ -n "$ec" ]; then
    ec=${ec#exit_code=}; if [ "$ec" = 0 ]; then echo "COMPLETED 0:0"; else echo "FAILED $ec:0"; fi
  else echo "UNKNOWN -"; fi
}
"""

# Streams $LOG from byte 0 while the job runs, then prints the end mark with the final state.
_FOLLOW = r"""
off=0; last=""
while :; do
  s=$(job_state); st=${s%% *}
  if [ "$st" != "$last" ]; then echo "@@steps-job-state@@ $s"; last=$st; fi
  if [ -e "$LOG" ]; then
    size=$(stat -c %s "$LOG")
    if [ "$size" -gt "$off" ]; then
      tail -c +$((off + 1)) "$LOG" | head -c $((size - off)); off=$size
    fi
  fi
  case " $TERMINAL " in *" $st "*) [ "$UNTIL_DONE" = 1 ] && break ;; esac
  [ "$UNTIL_DONE" = 1 ] || [ "$FOLLOW" = 1 ] || break
  sleep "$POLL"
done
sleep 0.5
if [ -e "$LOG" ]; then
  size=$(stat -c %s "$LOG")
  if [ "$size" -gt "$off" ]; then tail -c +$((off + 1)) "$LOG" | head -c $((size - off)); fi
fi
echo; echo "@@steps-job-end@@ $s"
"""


def exit_code_of(state: str, code: str) -> int | None:
    """Slurm's `exit:signal` as a process exit code (signal N -> 128+N; failed with 0 -> 1)."""
    if state not in TERMINAL:
        return None
    exit_part, _, sig_part = (code or "").partition(":")
    ec = int(exit_part) if exit_part.isdigit() else 0
    sig = int(sig_part) if sig_part.isdigit() else 0
    if ec:
        return ec
    if sig:
        return 128 + sig
    return 0 if state == "COMPLETED" else 1


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

    def job_dir(self, step_id: str, run_name: str, run_dir: Path) -> str:
        return f"{self.profile.remote_dir.rstrip('/')}/{step_id}/{run_name}"

    def probe(self, paths: list[str], script: str | None) -> RemoteFacts:
        """One round trip: which paths exist there, $HOME, the partition's GPU GRES."""
        lines = ["set +e"]
        for p in paths:
            q = shlex.quote(p)
            lines.append(f"if [ -e {q} ]; then echo 'E|'{q}; else echo 'M|'{q}; fi")
        lines.append('echo "H|$HOME"')
        part = self.profile.partition
        part_arg = f"-p {shlex.quote(part)} " if part else ""
        lines.append(
            f'if command -v sinfo >/dev/null; then echo "G|$(sinfo {part_arg}-h -o %G '
            '2>/dev/null | head -n 1)"; fi'
        )
        lines.append("command -v sbatch >/dev/null || echo 'S|missing'")
        proc = self.shell.run("\n".join(lines) + "\n")
        facts = RemoteFacts(self.name, self.profile, "")
        for line in proc.stdout.splitlines():
            tag, _, value = line.partition("|")
            if tag in ("E", "M"):
                facts.exists[value] = tag == "E"
            elif tag == "H":
                facts.home = value or None
            elif tag == "G":
                facts.gres = value.strip() or "(null)"
            elif tag == "S":
                raise StepsError(
                    "E-REMOTE-HOST",
                    f"sbatch is not available on {self.shell.where}",
                    fix="set `host` to a Slurm login node, or run from one",
                    exit_code=2,
                )
        return facts

    def _batch_script(self, req: LaunchRequest) -> str:
        """The plain (non-ray.sub) job: one srun of the command, in the container if any."""
        p = self.profile
        srun = ["srun", "--ntasks=1"]
        if p.container_image:
            srun += [f"--container-image={p.container_image}", "--no-container-mount-home"]
            srun += [f"--container-workdir={req.cwd}"]
            if p.mounts:
                srun.append(f"--container-mounts={','.join(p.mounts)}")
        setup = f"{p.setup_command}\n" if p.setup_command else ""
        return (
            "#!/bin/bash\n"
            f"# steps: {req.step_id}, run dir {req.job_dir}\n"
            "set -euo pipefail\n"
            "trap 'echo \"steps job exiting (exit_code=$?)\"' EXIT\n"
            f"cd {shlex.quote(req.cwd)}\n{setup}"
            f"{shlex.join([*srun, *req.command])}\n"
        )

    def sbatch_argv(self, req: LaunchRequest, job_name: str) -> list[str]:
        p = self.profile
        argv = ["sbatch", "--parsable", f"--job-name={job_name}", f"--nodes={req.nodes}"]
        argv += [f"--time={p.time}", f"--output={req.job_dir}/slurm-%j.out", "--export=ALL"]
        if p.account:
            argv.append(f"--account={p.account}")
        if p.partition:
            argv.append(f"--partition={p.partition}")
        if p.gpus_per_node:
            argv.append(f"--gres=gpu:{p.gpus_per_node}")
        argv += list(p.sbatch_args)
        argv.append(RAY_SUB if req.uses_ray_sub else f"{req.job_dir}/job.sbatch")
        return argv

    def job_env(self, req: LaunchRequest) -> dict[str, str]:
        """The plain variables the job gets (ray.sub's contract plus the profile's env)."""
        p = self.profile
        out: dict[str, str] = {}
        if req.uses_ray_sub:
            out["COMMAND"] = shlex.join(req.command)
            out["CONTAINER"] = p.container_image or ""
            out["MOUNTS"] = ",".join(p.mounts)
            out["GPUS_PER_NODE"] = str(req.gpus_per_node or p.gpus_per_node or 8)
            out["BASE_LOG_DIR"] = req.job_dir
            if p.setup_command:
                out["SETUP_COMMAND"] = p.setup_command
        out.update(req.env)
        return out

    def submit_script(self, req: LaunchRequest, job_name: str, secrets: dict[str, str]) -> str:
        keep = " ".join(sorted(secrets))
        unset = (
            "for n in $(compgen -e); do\n"
            '  case " $KEEP_SECRETS " in *" $n "*) continue ;; esac\n'
            f'  case "${{n^^}}" in {_SECRET_GLOB}) unset "$n" 2>/dev/null || true ;; esac\n'
            "done\n"
        )
        cwd = req.cwd if req.uses_ray_sub else req.job_dir
        return (
            "set -e\n"
            f"KEEP_SECRETS={shlex.quote(keep)}\n{unset}unset KEEP_SECRETS\n"
            f"{exports(self.job_env(req))}{exports(secrets)}"
            f"cd {shlex.quote(cwd)}\n"
            f"exec {shlex.join(self.sbatch_argv(req, job_name))}\n"
        )

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
        return f"steps-{req.step_id.rsplit('/', 1)[-1]}-{req.run_dir.name}"

    def submit(self, req: LaunchRequest) -> dict:
        """Stage the run dir, sbatch, and return the job record for run.json."""
        if not req.uses_ray_sub:
            (req.run_dir / "job.sbatch").write_text(self._batch_script(req), encoding="utf-8")
        self.shell.copy_dir(req.run_dir, req.job_dir)
        secrets = {n: self.env[n] for n in req.secret_names if n in self.env}
        secrets.update(req.config_secrets)
        job_name = self.job_name(req)
        proc = self.shell.run(self.submit_script(req, job_name, secrets))
        job_id = proc.stdout.strip().split(";")[0].splitlines()[-1:] if proc.stdout else []
        if proc.returncode != 0 or not job_id or not job_id[0].isdigit():
            raise StepsError(
                "E-SUBMIT",
                f"sbatch on {self.shell.where} refused the job: "
                f"{(proc.stderr or proc.stdout).strip()}",
                fix="check partition, account, --time and node counts in the profile",
                exit_code=2,
            )
        jid = job_id[0]
        log = f"{req.job_dir}/{jid}-logs/{DRIVER_LOG}" if req.uses_ray_sub else None
        return {
            "executor": "slurm",
            "profile": self.name,
            "host": self.profile.host,
            "ssh_options": list(self.profile.ssh_options),
            "remote_dir": self.profile.remote_dir,
            "job_id": jid,
            "job_name": job_name,
            "job_dir": req.job_dir,
            "log_path": log or f"{req.job_dir}/slurm-{jid}.out",
            "batch_output": f"{req.job_dir}/slurm-{jid}.out",
            "submitted_utc": submitted_now(),
            "state": "PENDING",
            "exit_code": None,
        }

    def _vars(self, job: dict, until_done: bool, follow: bool) -> str:
        values = {
            "ID": job["job_id"],
            "LOG": job["log_path"],
            "OUT": job.get("batch_output", job["log_path"]),
            "TERMINAL": " ".join(sorted(TERMINAL)),
            "UNTIL_DONE": "1" if until_done else "0",
            "FOLLOW": "1" if follow else "0",
            "POLL": os.environ.get("STEPS_POLL_SECONDS", "2"),
        }
        return "".join(f"{k}={shlex.quote(v)}\n" for k, v in values.items())

    def refresh(self, job: dict) -> dict:
        """The job record with its current state and exit code."""
        if job.get("state") in TERMINAL:
            return job
        proc = self.shell.run(self._vars(job, False, False) + _STATE_FN + "job_state\n")
        state, _, code = proc.stdout.strip().partition(" ")
        if state and state != "UNKNOWN":
            job = {**job, "state": state, "exit_code": exit_code_of(state, code)}
        return job

    def follow(self, job: dict, until_done: bool, follow: bool = True) -> int | None:
        """Print the driver log (as it grows when following); the exit code when done."""
        script = self._vars(job, until_done, follow) + _STATE_FN + _FOLLOW
        proc = self.shell.popen(script)
        final: int | None = None
        assert proc.stdout is not None
        try:
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace")
                if line.startswith(STATE_MARK):
                    state = line.split()[1]
                    if not until_done:
                        continue
                    print(f"job {job['job_id']}: {state}", file=sys.stderr, flush=True)
                elif line.startswith(END_MARK):
                    parts = line.split()
                    state, code = parts[1], parts[2] if len(parts) > 2 else ""
                    job.update(state=state, exit_code=exit_code_of(state, code))
                    final = job["exit_code"]
                else:
                    sys.stdout.write(line)
                    sys.stdout.flush()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
            proc.wait()
        return final

    def cancel(self, job: dict) -> str:
        proc = self.shell.run(f"scancel {shlex.quote(job['job_id'])}\n")
        if proc.returncode != 0:
            raise StepsError(
                "E-CANCEL",
                f"scancel {job['job_id']} failed: {proc.stderr.strip()}",
                fix="check the job id with `python -m steps status RUN`",
                exit_code=2,
            )
        return f"cancel requested for Slurm job {job['job_id']}"
