"""A checkpoint_dir (or log_dir) this user cannot write (issue 38, after the boundary): NeMo-RL
trains for hours, then its first save fails; the dry run says so for a launch here."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from preflight_fixtures import context_for
from user_configs import STEPS, user_config

from runners.preflight import preflight

NOBODY = 65534


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder every user can enter (tmp_path is root's alone when tests run as root)."""
    base = Path(tempfile.mkdtemp(prefix="steps-writable-"))
    base.chmod(0o755)
    yield base
    for folder, _, _ in os.walk(base):
        os.chmod(folder, 0o755)
    shutil.rmtree(base)


def as_a_user(judge: Callable[[], list[list[str]]]) -> list[list[str]]:
    """`judge()` as an unprivileged user: in a child process that drops root, since root may
    write anywhere; directly when the tests already run as a user."""
    if os.geteuid() != 0:
        return judge()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(write, json.dumps(judge()).encode())
            code = 0
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0 and data, "the unprivileged child failed"
    return json.loads(data)


def _unwritable(shared: Path, checkpoint_dir: Path) -> list[list[str]]:
    """The findings at checkpointing.checkpoint_dir of a config in `shared`, judged as an
    unprivileged user."""
    text = f"checkpointing:\n  enabled: true\n  checkpoint_dir: {checkpoint_dir}\n"
    ctx = context_for(user_config(shared, "dpo", text), STEPS / "dpo", "0.7.0")
    preflight(ctx)  # every lazy import made here: the child may not read root's Python

    def judge() -> list[list[str]]:
        found = preflight(ctx)
        mine = [f for f in found if f.key == "checkpointing.checkpoint_dir"]
        return [[f.code, f.message, str(f.line)] for f in mine]

    return as_a_user(judge)


def test_a_checkpoint_dir_in_a_read_only_folder_is_an_error_before_training(shared_dir) -> None:
    locked = shared_dir / "project"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)
    [[code, message, line]] = _unwritable(shared_dir, locked / "dpo" / "ckpt")
    assert code == "E-OUTPUT-UNWRITABLE" and line == "4"
    assert f"would be made in {locked}" in message and "first checkpoint" in message


def test_a_checkpoint_dir_in_a_writable_folder_is_clean(shared_dir) -> None:
    open_dir = shared_dir / "project"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    assert _unwritable(shared_dir, open_dir / "dpo" / "ckpt") == []
