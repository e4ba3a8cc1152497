"""The job commands' exit codes and errors when there is no cluster job to talk about."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from run_fixtures import REPO, clean_env, steps_cli


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    env = clean_env(tmp_path, STEPS_OUTPUT=str(tmp_path / "out"))

    def call(*argv: str):
        return steps_cli(monkeypatch, capsys, *argv, cwd=tmp_path, env=env)

    return call


def test_no_jobs_is_exit_0_and_one_json_document(cli, tmp_path):
    res = cli("jobs")
    assert res.returncode == 0 and f"no cluster jobs under {tmp_path / 'runs'}" in res.stdout
    doc = json.loads(cli("jobs", "--json").stdout)
    assert doc == {"runs_root": str(tmp_path / "runs"), "jobs": []}


@pytest.mark.parametrize("command", ["status", "logs", "cancel"])
def test_an_unknown_run_is_exit_2_naming_how_to_list_runs(cli, command):
    res = cli(command, "12345")
    assert res.returncode == 2
    assert "E-RUN-UNKNOWN no run '12345'" in res.stderr and "python -m steps jobs" in res.stderr


def test_a_local_run_dir_has_no_job_to_report(cli, tmp_path):
    assert cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--dry-run", "--keep").returncode == 0
    run_dir = next((tmp_path / "runs" / "rl" / "nemo_rl" / "dpo").iterdir())
    res = cli("status", str(run_dir))
    assert res.returncode == 2 and "E-RUN-NO-JOB" in res.stderr


def test_run_and_batch_together_is_a_usage_error(cli):
    res = cli("run", "rl/nemo_rl/dpo", "--run", "a", "--batch", "b")
    assert res.returncode == 2 and "not allowed with argument" in res.stderr


def test_jobs_and_status_import_no_ray(tmp_path):
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['steps', 'jobs']\n"
        "try:\n    runpy.run_module('steps', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('RAY' if 'ray' in sys.modules else 'NO-RAY')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
        env={**clean_env(tmp_path), "PYTHONPATH": str(REPO)}, timeout=60,
    )  # fmt: skip
    assert proc.stdout.strip().endswith("NO-RAY"), proc.stdout + proc.stderr
