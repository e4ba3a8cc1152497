"""Run shell scripts where the cluster is: here (a login node) or over the system `ssh`.

Every remote action is one `bash -s` whose script arrives on stdin, so values that must not be
seen (secrets) travel inside the channel, never on a command line; over ssh the user's own ssh
config applies (ProxyJump, ControlMaster, keys). Files reach the cluster with `rsync` over the
same ssh, or a plain copy when the shared filesystem is mounted here.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from catalog.errors import StepsError

SSH_BASE = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]


@dataclass
class Shell:
    """Where cluster commands run: `host=None` is this machine."""

    host: str | None = None
    ssh_options: list[str] = field(default_factory=list)
    env: Mapping[str, str] | None = None  # the local environment for local scripts

    @property
    def where(self) -> str:
        return self.host or "this machine"

    def argv(self) -> list[str]:
        if self.host is None:
            return ["bash", "-s"]
        return ["ssh", *SSH_BASE, *self.ssh_options, self.host, "bash -s"]

    def run(self, script: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run a bash script; an ssh failure (exit 255) is E-REMOTE-HOST, exit 2."""
        env = dict(os.environ if self.env is None else self.env)
        try:
            proc = subprocess.run(
                self.argv(), input=script, capture_output=True, text=True, env=env, timeout=timeout
            )
        except FileNotFoundError as exc:
            raise StepsError(
                "E-REMOTE-HOST",
                f"cannot start {exc.filename}: not installed here",
                fix="install the OpenSSH client (ssh) and bash",
                exit_code=2,
            ) from None
        except subprocess.TimeoutExpired:
            raise self._unreachable(f"no answer within {timeout:.0f} s") from None
        if self.host is not None and proc.returncode == 255:
            raise self._unreachable(proc.stderr.strip().splitlines()[-1:] or ["ssh failed"])
        return proc

    def popen(self, script: str) -> subprocess.Popen:
        """Start a long-running script (log following); the caller reads its stdout."""
        env = dict(os.environ if self.env is None else self.env)
        proc = subprocess.Popen(
            self.argv(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        assert proc.stdin is not None
        proc.stdin.write(script.encode())
        proc.stdin.close()
        return proc

    def _unreachable(self, detail: object) -> StepsError:
        text = detail if isinstance(detail, str) else " ".join(map(str, detail))
        return StepsError(
            "E-REMOTE-HOST",
            f"cannot reach {self.host} over ssh: {text}",
            fix="check `ssh HOST true` works without a password prompt (keys, ssh config, "
            "VPN), or unset `host` when running on the login node",
            exit_code=2,
        )

    def copy_dir(self, local: Path, remote: str) -> None:
        """Put the folder `local` at `remote` (rsync over ssh, or a local copy)."""
        if self.host is None:
            dest = Path(remote)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(local, dest, dirs_exist_ok=True)
            return
        ssh = shlex.join(["ssh", *SSH_BASE, *self.ssh_options])
        parent = shlex.quote(str(Path(remote).parent))
        argv = [
            "rsync",
            "-a",
            "--rsync-path",
            f"mkdir -p {parent} && rsync",
            "-e",
            ssh,
            f"{local}/",
            f"{self.host}:{remote}/",
        ]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        except FileNotFoundError:
            raise StepsError(
                "E-REMOTE-HOST", "rsync is not installed here", fix="install rsync", exit_code=2
            ) from None
        if proc.returncode != 0:
            raise StepsError(
                "E-REMOTE-STAGE",
                f"rsync of the run dir to {self.host}:{remote} failed: {proc.stderr.strip()}",
                fix="check that remote_dir exists and is writable on the cluster",
                exit_code=2,
            )


def exports(values: Mapping[str, str]) -> str:
    """`export NAME=value` lines for a script read from stdin (never a command line)."""
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in values.items())
