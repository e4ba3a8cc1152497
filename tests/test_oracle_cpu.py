"""The CPU oracle's own plumbing (bench/oracle_cpu.py, issue 38): a Ray head that cannot start gives
its slot back, its sockets live in a short folder whatever the work folder, and a NeMo-RL run
killed for memory is not judged (never a miss)."""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import oracle_cpu  # noqa: E402
from oracle_cpu_report import classify, killed, read_log  # noqa: E402


def _ray_that_dies(tmp_path: Path) -> str:
    """A venv whose `ray` records its argv and exits at once (a head that never starts)."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    ray = bin_dir / "ray"
    ray.write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "argv.txt"}\nexit 1\n')
    ray.chmod(0o755)
    return str(bin_dir / "python")


def test_a_head_of_its_own_that_fails_gives_the_slot_back(tmp_path):
    python = _ray_that_dies(tmp_path)
    slot = object.__new__(oracle_cpu.RayHead)  # the pool's head; never asked here
    pool = oracle_cpu.HeadPool([slot])
    a = argparse.Namespace(python=python, work=tmp_path / ("deep" * 30))
    variant = oracle_cpu.Variant(id="two-gpus", gpus=2)
    result = oracle_cpu.judge(a, variant, pool, {"PATH": "/usr/bin:/bin"})
    assert result["verdict"] == "not_run" and "did not start" in result["detail"]
    taken = threading.Event()
    threading.Thread(target=lambda: (pool.take(), taken.set()), daemon=True).start()
    assert taken.wait(5)  # the slot is free again: the next variant runs


def test_ray_sockets_live_in_a_short_folder_however_deep_the_work_folder(tmp_path):
    python = _ray_that_dies(tmp_path)
    deep = tmp_path / ("w" * 120)
    with contextlib.suppress(oracle_cpu.HeadFailed):
        oracle_cpu.RayHead(python, deep, {"PATH": "/usr/bin:/bin"})
    argv = (tmp_path / "argv.txt").read_text().split()
    temp = next(x.split("=", 1)[1] for x in argv if x.startswith("--temp-dir="))
    assert len(temp) < 20 and not Path(temp).exists()  # short, and removed with the head


def test_a_run_killed_for_memory_is_not_judged_never_missed():
    log = read_log("Loaded configuration from: x\nray.exceptions.OutOfMemoryError: Task was "
                   "killed due to the node running low on memory.\n")  # fmt: skip
    nres = {"rc": 1, "timed_out": False, **log}
    assert killed(nres)
    assert classify(False, False, "", killed(nres)) == "not_judged"
    sigkill = {"rc": -9, "timed_out": False, "boundary": None, "oom": False}
    assert classify(False, False, "", killed(sigkill)) == "not_judged"
    timeout = {"rc": -9, "timed_out": True, "boundary": None, "oom": False}
    assert classify(False, False, "", killed(timeout)) == "missed"  # our timeout, a real miss
