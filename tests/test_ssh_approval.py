"""The first ssh with a profile's settings is asked for once (issue 39 case 7).

A cloned project's env.toml chooses the host and ssh_options, and a ProxyCommand is a program
ssh runs here. Each test's profile has a ProxyCommand that leaves a mark when ssh runs it (the
real ssh; the host is never reached), so "nothing was run" is seen, not assumed. A terminal is a
real pseudo-terminal; without one (a pipe, as CI and the sshd lab tests run) the notice path.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_fixtures import clean_env

REPO = Path(__file__).resolve().parents[1]
PROMPT = "Run ssh with them? [y/N]"
DRY_RUN = ("data_prep/rl_prep", "-c", "tiny", "--batch", "p", "--dry-run")

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")


def workspace(tmp_path: Path, proxy: str = "touch {mark}") -> tuple[Path, Path, dict[str, str]]:
    """(work dir with env.toml, the mark its ProxyCommand leaves, env)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    mark = tmp_path / "ssh-ran"
    command = proxy.format(mark=mark)
    (work / "env.toml").write_text(
        f'[p]\nexecutor = "slurm"\nhost = "nobody@192.0.2.1"\nremote_dir = "{tmp_path}/shared"\n'
        f'ssh_options = ["-o", "ProxyCommand={command}"]\n',
        encoding="utf-8",
    )
    env = clean_env(tmp_path, STEPS_COMMAND_SECONDS="20")
    env.pop("STEPS_SSH_STRICT", None)
    return work, mark, env


def record(env: dict[str, str]) -> Path:
    return Path(env["STEPS_CACHE_DIR"]) / "nemo-rl-steps" / "ssh-approved.json"


def at_a_terminal(work: Path, env: dict[str, str], answer: str | None) -> tuple[int, str]:
    """`steps run ... --dry-run` on a pseudo-terminal; `answer` typed at the prompt (None: no
    prompt is expected). (exit code, everything it wrote)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "steps", "run", *DRY_RUN],
        stdin=slave, stdout=slave, stderr=slave, cwd=work,
        env={**env, "PYTHONPATH": str(REPO)}, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    out, answered, deadline = b"", False, time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        if answer is not None and not answered and PROMPT.encode() in out:
            os.write(master, answer.encode() + b"\n")
            answered = True
        if proc.poll() is not None and not ready:
            break
    os.close(master)
    code = proc.wait(timeout=30)
    return code, out.decode(errors="replace").replace("\r\n", "\n")


def test_a_terminal_is_asked_once_and_a_changed_proxycommand_asks_again(tmp_path):
    work, mark, env = workspace(tmp_path)

    code, out = at_a_terminal(work, env, "n")
    assert code == 2 and PROMPT in out, out
    assert f"host nobody@192.0.2.1; ProxyCommand touch {mark}" in out
    assert "E-SSH-UNAPPROVED" in out and "was not approved: nothing was run" in out
    assert not mark.exists() and not record(env).exists()  # no is not remembered: asked again

    code, out = at_a_terminal(work, env, "y")
    assert PROMPT in out and mark.exists(), out
    assert "E-SSH-UNAPPROVED" not in out
    assert record(env).stat().st_mode & 0o777 == 0o600
    [kept] = json.loads(record(env).read_text())["approved"].values()
    assert kept["answer"] == "yes" and kept["host"] == "nobody@192.0.2.1"
    assert str(mark) not in record(env).read_text()  # a digest of the settings, not them

    mark.unlink()
    code, out = at_a_terminal(work, env, None)
    assert PROMPT not in out and mark.exists(), out

    work, mark, env = workspace(tmp_path, proxy="touch {mark}.other")
    code, out = at_a_terminal(work, env, "n")
    assert code == 2 and PROMPT in out and f"ProxyCommand touch {mark}.other" in out


def test_without_a_terminal_a_notice_once_and_strict_mode_refuses(tmp_path, steps_in_process):
    from runners.launch import ssh_approval

    def invocation(env: dict[str, str]):
        """`steps run DRY_RUN` in this process (its stderr is no terminal), as a new process
        starts: with nothing settled in it, only the user's approval record to go by."""
        ssh_approval._settled.clear()
        return steps_in_process("run", *DRY_RUN, cwd=work, env=env)

    work, mark, env = workspace(tmp_path)
    first = invocation(env)
    assert "steps: note: first ssh with these settings from this machine" in first.stderr
    assert f"ProxyCommand touch {mark}" in first.stderr and mark.exists()
    again = invocation(env)
    assert "steps: note" not in again.stderr, again.stderr

    # noticed is not approved: strict mode still refuses these settings
    mark.unlink()
    strict = invocation({**env, "STEPS_SSH_STRICT": "1"})
    assert strict.returncode == 2 and not mark.exists()
    assert "E-SSH-UNAPPROVED ssh with host nobody@192.0.2.1; ProxyCommand touch" in strict.stderr
    assert "was never approved at a terminal of this machine" in strict.stderr


def test_an_approval_someone_else_can_write_approves_nothing(tmp_path, steps_in_process):
    work, mark, env = workspace(tmp_path)
    _, out = at_a_terminal(work, env, "y")
    assert mark.exists(), out
    mark.unlink()
    record(env).chmod(0o666)
    strict = steps_in_process("run", *DRY_RUN, cwd=work, env={**env, "STEPS_SSH_STRICT": "1"})
    assert strict.returncode == 2 and "E-SSH-UNAPPROVED" in strict.stderr
    assert not mark.exists()


@pytest.mark.parametrize(
    ("options", "shown"),
    [
        (["-oProxyCommand=nc %h %p"], "ProxyCommand nc %h %p"),
        (["-o", "ProxyCommand nc %h %p"], "ProxyCommand nc %h %p"),
        (["-J", "jump.example"], "ProxyJump jump.example"),
        (["-Jjump.example", "-o", "Port=2222"], "ProxyJump jump.example"),
        (["-o", "LocalCommand=id"], "LocalCommand id"),
    ],
)
def test_the_notice_names_what_ssh_would_run_or_go_through_in_any_spelling(
    tmp_path, capsys, options, shown
):
    from runners.launch.ssh_approval import approve

    env = {"STEPS_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    approve("me@login", options, env)
    err = capsys.readouterr().err
    assert f"(host me@login; {shown})" in err and "Port" not in err
    approve("me@login", options, env)  # noticed once per settings
    assert capsys.readouterr().err == ""
