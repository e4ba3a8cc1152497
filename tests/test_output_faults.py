"""Folders we write that cannot take the write: a setup finding (exit 2), nothing half-made left.

Real faults only: a 5 MB tmpfs filled up, a tmpfs mounted read-only, a 555 folder for a process
without CAP_DAC_OVERRIDE (root writes anywhere otherwise), and `/proc`. Mounting needs root;
those tests skip where `mount` is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from catalog.errors import EXIT_USAGE
from tests.run_fixtures import REPO, clean_env

SETPRIV = shutil.which("setpriv")
CAPS = "-dac_override,-dac_read_search"


def unprivileged_steps(*argv: str, cwd: Path, env: dict[str, str]):
    """`python -m steps ...` in a subprocess without the capabilities that let root write a
    folder whose mode says no (the venv's Python lives under /root, so the test drops
    capabilities rather than switching to another uid). The other faults are real filesystems,
    met by the CLI in this process (`steps_in_process`)."""
    cmd = [sys.executable, "-m", "steps", *argv]
    if os.geteuid() == 0:
        cmd = [SETPRIV, f"--inh-caps={CAPS}", f"--bounding-set={CAPS}", "--", *cmd]
    env = {**env, "PYTHONPATH": str(REPO)}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def mount_tmpfs(where: Path, options: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 5 MB filesystem."""
    yield from mount_tmpfs(tmp_path / "small", "size=5m")


@pytest.fixture
def read_only_disk(tmp_path: Path) -> Iterator[Path]:
    yield from mount_tmpfs(tmp_path / "ro", "size=1m,ro")


def gym_rows(path: Path, n: int) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            row = {
                "responses_create_params": {"input": [{"role": "user", "content": f"{i}" * 200}]},
                "agent_ref": {"type": "responses_api_agents", "name": "math_agent"},
                "question": f"q{i}",
                "expected_answer": str(i),
            }
            fh.write(json.dumps(row) + "\n")
    return path


@pytest.fixture
def blend_8mb(tmp_path: Path) -> Path:
    """A blend of about 8 MB of rows: more than the small disk holds."""
    (tmp_path / "in").mkdir()
    gym_rows(tmp_path / "in/rows.jsonl", 30_000)
    blend = tmp_path / "in/blend.yaml"
    blend.write_text("datasets:\n  - name: rows\n    path: rows.jsonl\n    transform: nemo_gym\n")
    return blend


def rl_prep(blend: Path, out: Path) -> list[str]:
    """`steps run data_prep/rl_prep` of `blend` into `out`."""
    tiny = ["run", "data_prep/rl_prep", "-c", "tiny", "shard_size=1MB"]
    return [*tiny, f"blend_path={blend}", f"output_dir={out}"]


def visible(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def finding(done, code: str) -> str:
    assert done.returncode == EXIT_USAGE, done.stderr
    assert "E-INTERNAL" not in done.stderr and "Traceback" not in done.stderr
    return next(line for line in done.stderr.splitlines() if f" {code} " in line)


def test_a_full_disk_under_output_dir_is_a_setup_finding_and_leaves_nothing(
    tmp_path, small_disk, blend_8mb, steps_in_process
):
    argv = rl_prep(blend_8mb, small_disk / "out")
    done = steps_in_process(*argv, cwd=tmp_path, env=clean_env(tmp_path))
    line = finding(done, "E-OUTPUT-DIR")
    assert f"no space left on the filesystem at {small_disk}" in line
    assert visible(small_disk) == []


def test_a_full_disk_under_output_dir_with_json_is_one_finding_exit_2(
    tmp_path, small_disk, blend_8mb, steps_in_process
):
    argv = [*rl_prep(blend_8mb, small_disk / "out"), "--json"]
    done = steps_in_process(*argv, cwd=tmp_path, env=clean_env(tmp_path))
    assert done.returncode == EXIT_USAGE, done.stderr
    (found,) = json.loads(done.stdout)["findings"]
    assert found["code"] == "E-OUTPUT-DIR" and "no space left" in found["message"]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "data_prep/rl_prep", "-c", "tiny", "output_dir={out}"],
        ["run", "rl/nemo_rl/rlvr", "-c", "tiny", "--dry-run", "--keep"],
    ],
    ids=["rl_prep", "dry-run-keep"],
)
def test_a_full_disk_where_runs_go_is_a_setup_finding_and_leaves_no_empty_runs_folders(
    tmp_path, small_disk, argv, steps_in_process
):
    work = small_disk / "work"
    work.mkdir()
    with pytest.raises(OSError), open(small_disk / "filler", "wb") as fh:  # fill to the last block
        while True:
            fh.write(b"\0" * (1 << 16))
            fh.flush()
    argv = [a.format(out=tmp_path / "out") for a in argv]
    done = steps_in_process(*argv, cwd=work, env=clean_env(tmp_path))
    line = finding(done, "E-RUN-DIR")
    assert f"no space left on the filesystem at {small_disk}" in line
    assert visible(work) == []


def test_a_read_only_mount_as_output_is_a_setup_finding(
    tmp_path, read_only_disk, blend_8mb, steps_in_process
):
    argv = rl_prep(blend_8mb, read_only_disk / "out")
    done = steps_in_process(*argv, cwd=tmp_path, env=clean_env(tmp_path))
    line = finding(done, "E-OUTPUT-DIR")
    assert f"{read_only_disk} is read-only" in line


needs_unprivileged = pytest.mark.skipif(
    os.geteuid() == 0 and SETPRIV is None, reason="root without setpriv writes any folder"
)


@needs_unprivileged
def test_an_output_folder_this_user_cannot_write_is_a_setup_finding(tmp_path, blend_8mb):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    done = unprivileged_steps(
        *rl_prep(blend_8mb, locked / "out"), cwd=tmp_path, env=clean_env(tmp_path)
    )
    line = finding(done, "E-OUTPUT-DIR")
    assert f"{locked} is not writable by this user" in line
    assert visible(locked) == []


@needs_unprivileged
def test_a_working_folder_this_user_cannot_write_is_a_setup_finding_for_runs(tmp_path):
    locked = tmp_path / "cwd"
    locked.mkdir(mode=0o555)
    argv = ["run", "data_prep/rl_prep", "-c", "tiny", f"output_dir={tmp_path / 'out'}"]
    done = unprivileged_steps(*argv, cwd=locked, env=clean_env(tmp_path))
    line = finding(done, "E-RUN-DIR")
    assert f"{locked} is not writable by this user" in line
    assert "--runs-dir" in done.stderr
    assert not (tmp_path / "out").exists()


def test_proc_as_output_is_a_setup_finding(tmp_path, steps_in_process):
    argv = ["run", "data_prep/rl_prep", "-c", "tiny", "output_dir=/proc/self/x"]
    done = steps_in_process(*argv, cwd=tmp_path, env=clean_env(tmp_path))
    line = finding(done, "E-OUTPUT-DIR")
    assert "takes no new files" in line
