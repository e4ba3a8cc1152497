"""Text from a job's log never drives your terminal (issue 27 item 5, audit diagnose-osc-escape).

Anyone's program writes a job's log: `diagnose`, `logs` and `status` print what it wrote with
every control sequence removed (a title escape, a screen clear, colours, C1 controls), one
function for all (runners/monitor/logscan.py `terminal_safe`). The job here is a real local
Slurm-profile record whose log is a real file; no cluster is asked (the job has ended).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from runners.monitor.terminal import terminal_safe

HOSTILE = "ValueError: boom \x1b]0;TITLE\x07\x1b[2J\x1b[31m"
CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")  # any C0/DEL, C1 as UTF-8


def ended_job(tmp_path: Path) -> Path:
    """A failed job of a local Slurm profile whose log holds a traceback with escapes (and
    whose recorded reason, which a cluster's stderr wrote, holds some too)."""
    (tmp_path / "env.toml").write_text(
        f'[here]\nexecutor = "slurm"\nremote_dir = "{tmp_path}/remote"\n', encoding="utf-8"
    )
    job_dir = tmp_path / "remote" / "dpo-1"
    job_dir.mkdir(parents=True)
    log = job_dir / "slurm-4242.out"
    log.write_text(
        "\x1b]2;step 1\x1b\\starting \x9b2Jnow\r\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/nemo_rl/train.py", line 3, in main\n'
        f"{HOSTILE}\n",
        encoding="utf-8",
    )
    run_dir = tmp_path / "runs" / "rl" / "nemo_rl" / "dpo" / "20260101T000000Z-escape00"
    run_dir.mkdir(parents=True)
    job = {
        "executor": "slurm", "profile": "here", "host": None, "job_id": "4242",
        "job_name": "steps-dpo-escape", "job_dir": str(job_dir), "log_path": str(log),
        "batch_output": str(log), "submitted_utc": "2026-01-01T00:00:00.000000Z",
        "state": "FAILED", "exit_code": 1, "reason": "Slurm said \x1b]0;TITLE\x07\x1b[2Jno",
    }  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps({"step": "rl/nemo_rl/dpo", "job": job}))
    return run_dir


@pytest.mark.parametrize("argv", [("diagnose", "4242"), ("logs", "4242"), ("status", "4242")])
def test_a_log_line_with_escapes_prints_no_control_byte(tmp_path, argv, steps_in_process):
    ended_job(tmp_path)
    env = {**os.environ, "STEPS_COMMAND_SECONDS": "20"}
    res = steps_in_process(*argv, cwd=tmp_path, env=env)
    out, err = res.stdout.encode(), res.stderr.encode()  # the bytes a UTF-8 terminal gets
    assert res.returncode == 0, res.stderr
    assert not CONTROL.search(out), out
    assert not CONTROL.search(err), err
    if argv[0] == "diagnose":
        text = out.decode()
        assert "message: ValueError: boom\n" in text and "TITLE" not in text
    if argv[0] == "status":  # a reason the cluster gave (its stderr) is shown safe too
        assert b"state: FAILED: Slurm said no, exit code 1\n" in out
    if argv[0] == "logs":
        assert b"starting now\nTraceback (most recent call last):\n" in out
        assert b"ValueError: boom \n" in out


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("title \x1b]0;TITLE\x07end", "title end"),
        ("st-ended \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "st-ended link"),
        ("dcs \x1bP1$r0m\x1b\\ apc \x1b_hidden\x1b\\ pm \x1b^x\x1b\\.", "dcs  apc  pm ."),
        ("csi \x1b[2J\x1b[1;1H\x1b[?1049h\x1b[31mred\x1b[0m", "csi red"),
        ("c1 \x9b2J\x9d0;t\x9cok\x85", "c1 ok"),
        ("esc \x1b(B\x1bc\x1b7lone\x1b", "esc lone"),
        ("c0 \x00\x08\x0b\x0c\x7fkept\ttab\n", "c0 kept\ttab\n"),
        ("bar 1\rbar 2\r\nnext", "bar 1\nbar 2\nnext"),
        ("unterminated \x1b]0;title\nnext line", "unterminated \nnext line"),
    ],
)
def test_terminal_safe_removes_every_control_sequence(raw, shown):
    assert terminal_safe(raw) == shown
