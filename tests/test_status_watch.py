"""`status -f`: the refresh loop (runners.launch.jobs.watch) and how the CLI prints it.

No daemon: the profile points ssh at a closed port, so the cluster never says the job's state.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from run_fixtures import REPO

from runners.launch.jobs import watch
from runners.launch.records import job_of, locate

ENV_TOML = """[lab]
executor = "slurm"
host = "localhost"
ssh_options = ["-o", "ConnectTimeout=5", "-p", "1"]
remote_dir = "/srv/steps"
"""


def _run_dir(tmp_path: Path) -> Path:
    """A running Slurm job's run dir under tmp_path/runs, launched with profile [lab]."""
    (tmp_path / "env.toml").write_text(ENV_TOML)
    run_dir = tmp_path / "runs" / "rl" / "nemo_rl" / "dpo" / "20260101T000000Z-watch000"
    run_dir.mkdir(parents=True)
    job = {"executor": "slurm", "profile": "lab", "host": "localhost",
           "remote_dir": "/srv/steps", "job_id": "999", "job_name": "steps-dpo-w",
           "job_dir": "/srv/steps/x", "log_path": "/srv/steps/x/slurm-999.out",
           "submitted_utc": "2026-01-01T00:00:00.000000Z", "state": "RUNNING"}  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps({"step": "rl/nemo_rl/dpo", "job": job}))
    return run_dir


def test_watch_gives_up_after_the_cluster_stayed_silent(tmp_path, monkeypatch):
    run_dir = _run_dir(tmp_path)
    monkeypatch.setenv("STEPS_SILENT_SECONDS", "0.5")
    data = locate(json.loads((run_dir / "run.json").read_text()), os.environ, tmp_path)
    seen = list(watch(run_dir, data, job_of(data), interval=0.1, stall_factor=5.0))
    assert seen and all(s.job.state == "UNKNOWN" for s in seen)
    assert [s.silent for s in seen] == [False] * (len(seen) - 1) + [True]
    assert "localhost port 1: Connection refused" in (seen[-1].job.reason or "")
    assert json.loads((run_dir / "run.json").read_text())["job"]["state"] == "RUNNING"


def test_status_follow_prints_unknown_lines_and_exits_2_when_the_cluster_stays_silent(tmp_path):
    _run_dir(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "STEPS_SILENT_SECONDS": "0.5"}
    res = subprocess.run(
        [sys.executable, "-m", "steps", "status", "last", "-f", "--interval", "0.1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert "state: UNKNOWN (last known RUNNING)" in res.stdout
    refreshes = [line for line in res.stdout.splitlines() if re.match(r"\d\d:\d\d:\d\d ", line)]
    assert refreshes and all(" UNKNOWN: " in line for line in refreshes)
