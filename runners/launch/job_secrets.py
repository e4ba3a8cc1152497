"""How secrets reach a Slurm job's driver without entering the environment ray.sub prints.

NeMo-RL v0.6.0's ray.sub runs a bare `env` in its head and worker steps, and v0.7.0 and later do
so with `RAY_SUB_DEBUG_ENV=1` behind a filter that still prints AWS_SECRET_ACCESS_KEY; both land
in `<jobid>-logs/ray-head.log` on shared storage. So no secret is in the job's environment at
all: the submit script (read by `bash -s`, over ssh's channel when remote) writes them into a
0600 file in the run dir with the `printf` builtin (no command line, no heredoc temp file),
unsets every variable holding a secret (the word test of `runners.secrets`, mirrored in bash
here), and only then runs sbatch. The driver's command sources the file with xtrace off and
removes it before exec'ing the program; the plain srun job's batch script does the same after
its setup_command, in a subshell that execs srun (setup never holds a value). Slurm's stored
submit environment and ray.sub's dumps never see a value.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from runners.secrets import SECRET_WORDS, SWITCH_VALUES

SECRETS_FILE = ".steps-secrets.env"

# runners.secrets.holds_secret in bash: the same words (camelCase split as `_words` does) and
# the same switch values; tests/test_job_secrets.py holds the two to the same answers.
_WORDS = "|".join(sorted(SECRET_WORDS))
_SWITCHES = "|".join(f'"{v}"' for v in sorted(SWITCH_VALUES))
SCRUB = rf"""_steps_holds_secret() {{
  local s=$1 w v
  while [[ $s =~ ^(.*[a-z0-9])([A-Z].*)$ ]]; do s="${{BASH_REMATCH[1]}}_${{BASH_REMATCH[2]}}"; done
  s=${{s,,}}
  for w in ${{s//[^a-z0-9]/ }}; do
    case $w in {_WORDS})
      v=${{!1}}; v=${{v,,}}; v=${{v#"${{v%%[![:space:]]*}}"}}; v=${{v%"${{v##*[![:space:]]}}"}}
      case $v in {_SWITCHES}) return 1 ;; esac
      return 0 ;;
    esac
  done
  return 1
}}
for _n in $(compgen -e); do
  if _steps_holds_secret "$_n"; then unset "$_n" 2>/dev/null || true; fi
done
unset _n
"""


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


def read_and_remove(job_dir: str, names: list[str]) -> str:
    """Shell that loads the secrets file with xtrace off, then deletes it (driver side)."""
    path = shlex.quote(secrets_path(job_dir))
    missing = shlex.quote(
        f"steps: no secrets file (read by an earlier start of this job?): "
        f"{' '.join(sorted(names))} not set"
    )
    return f"set +x; if [ -f {path} ]; then . {path}; rm -f {path}; else echo {missing} >&2; fi"


def driver_command(job_dir: str, names: list[str], argv: list[str]) -> str:
    """ray.sub's COMMAND: load the secrets (when there are any), then exec the program."""
    if not names:
        return shlex.join(argv)
    return f"{read_and_remove(job_dir, names)}; exec {shlex.join(argv)}"


def remove_file(path: str) -> str:
    """Bash that deletes a secrets file the job never read (it ended or was cancelled first)."""
    return f"rm -f {shlex.quote(path)}\n"
