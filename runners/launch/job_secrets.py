"""How secrets reach a Slurm job's driver without entering the environment ray.sub prints.

NeMo-RL v0.6.0's ray.sub runs a bare `env` in its head and worker steps (v0.7.0+ with
`RAY_SUB_DEBUG_ENV=1`, behind a filter that still prints AWS_SECRET_ACCESS_KEY), into
`<jobid>-logs/ray-head.log`. So the submit script (read by `bash -s`) writes the secrets into a
0600 file in the run dir with the `printf` builtin (no command line, no temp file) and runs
sbatch with every secret-holding variable removed by name (`env -u`: bash cannot `unset` a name
like `my.token`); the driver sources the file with xtrace off and removes it before exec.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from runners.secrets import holds_secret, is_secret_env

SECRETS_FILE = ".steps-secrets.env"


def names_to_unset(
    env: Mapping[str, str] | None, report: Mapping[str, bool] | None, keep: set[str]
) -> list[str]:
    """The submitting environment's secret-holding variables but `keep`: `env` here, else the
    probe's `report` of the login environment (name -> its value is a switch)."""
    if report is not None:
        held = {n for n, switch in report.items() if is_secret_env(n) and not switch}
    else:
        held = {n for n, v in (env or {}).items() if holds_secret(n, v)}
    return sorted(held - keep)


def without(names: list[str], argv: list[str]) -> str:
    """`argv` as a command line run without the variables `names` (their names only)."""
    unset = [arg for name in names for arg in ("-u", name)]
    return shlex.join(["env", *unset, *argv] if names else argv)


def secrets_path(job_dir: str) -> str:
    """The secrets file of a run dir as the job sees it."""
    return f"{job_dir.rstrip('/')}/{SECRETS_FILE}"


def write_file(job_dir: str, secrets: Mapping[str, str]) -> str:
    """Bash that writes the secrets file (0600 from its creation, whole or not at all)."""
    path = shlex.quote(secrets_path(job_dir))
    lines = " ".join(shlex.quote(f"export {k}={shlex.quote(v)}") for k, v in secrets.items())
    return (
        f"( umask 077; printf '%s\\n' {lines} > {path}.part && mv -f {path}.part {path} )"
        " || { echo 'steps: cannot write the secrets file in the run dir' >&2; exit 1; }\n"
    )


def driver_command(job_dir: str, names: list[str], argv: list[str]) -> str:
    """ray.sub's COMMAND: load the secrets file (xtrace off) and delete it, then exec `argv`."""
    if not names:
        return shlex.join(argv)
    path = shlex.quote(secrets_path(job_dir))
    missing = shlex.quote(
        f"steps: no secrets file (read by an earlier start of this job?): "
        f"{' '.join(sorted(names))} not set"
    )
    load = f"if [ -f {path} ]; then . {path}; rm -f {path}; else echo {missing} >&2; fi"
    return f"set +x; {load}; exec {shlex.join(argv)}"


def remove_file(path: str) -> str:
    """Bash that deletes a secrets file the job never read (it ended or was cancelled first)."""
    return f"rm -f {shlex.quote(path)}\n"
