"""Run programs where the cluster is: here (a login node) or over the system `ssh`.

Every remote action is one program read on stdin, so secrets never reach a command line: a
question is `remote_probe` under `python3 -I -S -` (`ask`), an action a few lines of `bash -s`.
Files go with `rsync` over the same ssh, or a plain copy here. Every wait is bounded: a command
runs in its own process group, killed whole when its time is up (a grandchild holding the pipes
cannot keep us waiting), and ssh drops a silent connection (ServerAlive).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.errors import StepsError

SSH_BASE = [
    "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
    "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3",
]  # fmt: skip

# How long each kind of wait may last, in seconds; `$STEPS_<NAME>_SECONDS` overrides.
BOUNDS = {
    "COMMAND": 60,  # one short script (probe, job state, scancel)
    "SUBMIT": 60,  # sbatch
    "STAGE": 600,  # rsync of the run dir
    "SLURM_CALL": 15,  # one Slurm tool call inside a script (sacct, scontrol, squeue)
    "SILENT": 300,  # a followed job whose state Slurm cannot give, or a silent stream
}


def seconds(name: str, env: Mapping[str, str] | None = None) -> float:
    """The bound for one kind of wait: $STEPS_<NAME>_SECONDS, else BOUNDS[name]."""
    raw = (os.environ if env is None else env).get(f"STEPS_{name}_SECONDS", "")
    try:
        value = float(raw)
    except ValueError:
        return float(BOUNDS[name])
    return value if value > 0 else float(BOUNDS[name])


class LostContact(Exception):
    """A followed job's stream ended or went silent without its end: the job may still run."""

    def __init__(self, where: str, detail: str) -> None:
        self.where = where
        self.detail = detail
        super().__init__(f"lost contact with {where}: {detail}")


def run_bounded(
    argv: list[str], script: str | None, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess:
    """subprocess.run in a new process group, the whole group killed on timeout or Ctrl-C."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if script is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env),
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(script, timeout=timeout)
    except BaseException:
        kill_group(proc)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a process started with start_new_session, and everything it started."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()


@dataclass
class Shell:
    """Where cluster commands run: `host=None` is this machine."""

    host: str | None = None
    ssh_options: list[str] = field(default_factory=list)
    env: Mapping[str, str] | None = None  # the local environment for local scripts

    @property
    def where(self) -> str:
        return self.host or "this machine"

    def argv(self, python: bool = False) -> list[str]:
        """bash, or remote_probe under an isolated Python without `site` reading stdin (over
        ssh the program's text comes first; here the module is imported)."""
        if self.host is None and python:
            return [sys.executable, "-I", "-S", "-c", _BOOT, str(Path(__file__).parent)]
        if self.host is None:
            return ["bash", "-s"]
        from runners.launch.ssh_approval import approve

        approve(self.host, self.ssh_options, self._env())  # a first use of these settings: ask
        # `--`: nothing after the options is read as one, whatever the host is called
        program = "python3 -I -S -" if python else "bash -s"
        return ["ssh", *SSH_BASE, *self.ssh_options, "--", self.host, program]

    def _env(self) -> dict[str, str]:
        return dict(os.environ if self.env is None else self.env)

    def seconds(self, name: str) -> float:
        return seconds(name, self._env())

    def run(
        self, script: str, what: str, bound: str = "COMMAND", python: bool = False
    ) -> subprocess.CompletedProcess:
        """Run a bash (or Python) script doing `what`; a timeout or ssh failure (exit 255) is
        E-REMOTE-HOST, exit 2."""
        timeout = self.seconds(bound)
        try:
            proc = run_bounded(self.argv(python), script, self._env(), timeout)
        except FileNotFoundError as exc:
            raise StepsError(
                "E-REMOTE-HOST",
                f"cannot start {exc.filename}: not installed here",
                fix="install the OpenSSH client (ssh) and bash",
                exit_code=2,
            ) from None
        except subprocess.TimeoutExpired:
            raise self.timed_out(what, timeout, bound) from None
        if self.host is not None and proc.returncode == 255:
            raise self._unreachable(last_line(proc.stderr) or "ssh failed")
        return proc

    def ask(self, request: dict, what: str) -> dict:
        """remote_probe's answer to `request`; E-REMOTE-HOST (exit 2) when no JSON came back."""
        proc = self.run(self.program(request), what, python=True)
        try:
            answer = json.loads(proc.stdout)
        except ValueError:
            answer = None
        if isinstance(answer, dict):
            return answer
        said = last_line(proc.stderr) or f"exit status {proc.returncode}, no answer"
        raise StepsError(
            "E-REMOTE-HOST",
            f"{what} on {self.where} failed: {said}",
            fix=f"check that `python3` (3.8 or later) runs on {self.where}",
            exit_code=2,
        )

    def program(self, request: dict) -> str:
        """What Python reads on stdin: the request (over ssh, after the program's text)."""
        text = json.dumps({"call": self.seconds("SLURM_CALL"), **request})
        return text if self.host is None else f"{_probe_source()}\nmain({json.dumps(text)})\n"

    def timed_out(self, what: str, timeout: float, bound: str) -> StepsError:
        via = f"on {self.host} (over ssh)" if self.host else "on this machine"
        return StepsError(
            "E-REMOTE-HOST",
            f"{what} {via} did not finish within {timeout:g} s",
            fix=(
                f"check `ssh {self.host} true` answers (VPN, load on the login node); "
                if self.host
                else "check that the Slurm commands answer here (`squeue`); "
            )
            + f"a slow cluster may need a larger STEPS_{bound}_SECONDS",
            exit_code=2,
        )

    def popen(
        self, script: str, python: bool = False, stderr: Any = subprocess.DEVNULL
    ) -> subprocess.Popen:
        """Start a long-running script whose stdout the caller reads (a log scan)."""
        proc = subprocess.Popen(
            self.argv(python),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=self._env(),
            start_new_session=True,
        )
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # ssh ended first (refused): stderr says why
            proc.stdin.write(script.encode())
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        return proc

    def stream(self, request: dict) -> Stream:
        """Start remote_probe's follow of `request` (stdout read with bounded waits)."""
        err = tempfile.TemporaryFile()  # noqa: SIM115 - the Stream owns and closes it
        return Stream(self.popen(self.program(request), python=True, stderr=err), err)

    def _unreachable(self, detail: str) -> StepsError:
        return StepsError(
            "E-REMOTE-HOST",
            f"cannot reach {self.host} over ssh: {detail}",
            fix="check `ssh HOST true` works without a password prompt (keys, ssh config, "
            "VPN), or unset `host` when running on the login node",
            exit_code=2,
        )

    def copy_dir(self, local: Path, remote: str, links: Mapping[str, str] | None = None) -> None:
        """Put the folder `local` at `remote`; each name in `links` becomes a symlink there."""
        links = dict(links or {})
        if self.host is None:
            dest = Path(remote)
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)

                def skip(folder: str, names: list[str]) -> list[str]:
                    return [n for n in names if n in links and folder == str(local)]

                shutil.copytree(local, dest, dirs_exist_ok=True, ignore=skip)
                for name, target in links.items():
                    (dest / name).unlink(missing_ok=True)
                    (dest / name).symlink_to(target, target_is_directory=True)
            except OSError as exc:
                raise self._stage_failed(remote, str(exc)) from None
            return
        self.argv()  # approved (runners/launch/ssh_approval) before rsync starts ssh
        ssh = shlex.join(["ssh", *SSH_BASE, *self.ssh_options])
        prepare = f"mkdir -p {shlex.quote(remote)}"
        for name, target in links.items():
            prepare += f" && ln -sfn -- {shlex.quote(target)} {shlex.quote(f'{remote}/{name}')}"
        argv = [
            "rsync",
            "-a",
            *(f"--exclude=/{name}" for name in links),
            "--rsync-path",
            f"{prepare} && rsync",
            "-e",
            ssh,
            "--",
            f"{local}/",
            f"{self.host}:{remote}/",
        ]
        timeout = self.seconds("STAGE")
        try:
            proc = run_bounded(argv, None, self._env(), timeout)
        except FileNotFoundError:
            raise StepsError(
                "E-REMOTE-HOST", "rsync is not installed here", fix="install rsync", exit_code=2
            ) from None
        except subprocess.TimeoutExpired:
            raise self._stage_failed(
                remote, f"rsync did not finish within {timeout:g} s", bound=True
            ) from None
        if proc.returncode != 0:
            raise self._stage_failed(remote, f"rsync failed: {proc.stderr.strip()}")

    def put_once(self, local: Path, remote: str) -> None:
        """Put `local` at `remote` unless a folder is there: written aside and renamed."""
        if self.host is None:
            if not Path(remote).is_dir():
                from runners.launch.job_code import write_aside

                try:
                    write_aside(Path(remote), lambda aside: self.copy_dir(local, str(aside)))
                except OSError as exc:
                    raise self._stage_failed(remote, str(exc)) from None
            return
        there = shlex.quote(remote)
        if self.run(f"test -d {there}\n", what="test -d").returncode == 0:
            return
        from runners.launch.job_code import ABANDONED_MINUTES

        parent = shlex.quote(str(Path(remote).parent))
        aside = f"{Path(remote).parent}/.{Path(remote).name}.{os.getpid()}.partial"
        self.copy_dir(local, aside)
        moved = self.run(f"mv -T -- {shlex.quote(aside)} {there} 2>/dev/null || rm -rf -- "
                         f"{shlex.quote(aside)}\ntest -d {there} || exit 1\n"
                         f"find {parent} -maxdepth 1 -name '.*.partial' -mmin "
                         f"+{ABANDONED_MINUTES} -exec rm -rf -- {{}} + 2>/dev/null\nexit 0\n",
                         what="mv")  # fmt: skip
        if moved.returncode != 0:
            raise self._stage_failed(remote, f"cannot rename {aside} into place")

    def _stage_failed(self, remote: str, detail: str, bound: bool = False) -> StepsError:
        dest = f"{self.host}:{remote}" if self.host else remote
        fix = "check that remote_dir exists and is writable " + (
            "on the cluster" if self.host else "here (the cluster's shared storage, mounted)"
        )
        if bound:
            fix += " and that the link is up; a large run dir may need a larger STEPS_STAGE_SECONDS"
        return StepsError(
            "E-REMOTE-STAGE",
            f"staging the run dir to {dest} failed (nothing was submitted): {detail}",
            fix=fix,
            exit_code=2,
        )


class Stream:
    """A following script's stdout read line by line, each wait bounded; stderr kept for errors."""

    def __init__(self, proc: subprocess.Popen, err) -> None:
        self.proc = proc
        self._err = err
        self._buf = b""
        assert proc.stdout is not None
        self._fd = proc.stdout.fileno()

    def _fill(self, silence: float) -> bool:
        """Read what arrived; False at the end, TimeoutError after `silence` s."""
        ready, _, _ = select.select([self._fd], [], [], silence)
        if not ready:
            raise TimeoutError
        chunk = os.read(self._fd, 1 << 16)
        self._buf += chunk
        return bool(chunk)

    def line(self, silence: float) -> bytes | None:
        """The next line without its newline; None at the end of the stream."""
        while b"\n" not in self._buf:
            if not self._fill(silence):
                return None
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def stderr_tail(self) -> str:
        self._err.seek(0)
        return last_line(self._err.read().decode("utf-8", "replace"))

    def close(self) -> None:
        if self.proc.poll() is None:
            kill_group(self.proc)
        else:
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._err.close()


# Here remote_probe is imported from its folder (after the standard library on sys.path).
_BOOT = (
    "import sys; sys.path.append(sys.argv[1]); import remote_probe as p; p.main(sys.stdin.read())"
)


@functools.cache
def _probe_source() -> str:
    """The program sent over ssh: slurm_queries as a module built in memory, then remote_probe."""
    here = Path(__file__).parent
    queries, probe = ((here / f"{name}.py").read_text(encoding="utf-8")
                      for name in ("slurm_queries", "remote_probe"))  # fmt: skip
    return (
        "import sys, types\n"
        "_q = sys.modules['slurm_queries'] = types.ModuleType('slurm_queries')\n"
        f"exec(compile({queries!r}, 'slurm_queries.py', 'exec'), _q.__dict__)\n"
        f"exec(compile({probe!r}, 'remote_probe.py', 'exec'))"
    )


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def exports(values: Mapping[str, str]) -> str:
    """`export NAME=value` lines for a script read from stdin (never a command line)."""
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in values.items())
