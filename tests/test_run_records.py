"""run.json and its job record have one format each (runners/rundir.py RunRecord, JobRecord).

What `run` writes fits RunRecord; a job record round-trips unchanged, keys this version does not
know included; a job record that does not fit its format is E-RUN-RECORD (exit 2) in every job
command, never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from run_fixtures import REPO

from catalog.errors import Finding
from runners.launch.records import job_of
from runners.rundir import JobRecord, RunRecord, run_record

SLURM_JOB = {
    "executor": "slurm", "profile": "lab", "host": "localhost", "ssh_options": ["-p", "1"],
    "remote_dir": "/srv/steps", "job_id": "999", "job_name": "steps-dpo-x",
    "job_dir": "/srv/steps/x", "log_template": "/srv/steps/x/slurm-%j.out",
    "log_path": "/srv/steps/x/slurm-999.out", "batch_output": "/srv/steps/x/slurm-999.out",
    "submitted_utc": "2026-01-01T00:00:00.000000Z", "state": "RUNNING", "exit_code": None,
}  # fmt: skip


def test_run_json_as_run_writes_it_fits_the_run_record(tmp_path):
    class Art:
        name, type, config_key, value, is_path = "train", "jsonl", "data.train", "/d.jsonl", True

    text = run_record(
        step_id="rl/nemo_rl/dpo", version="1", argv=["run", "dpo"], cwd=tmp_path,
        sources=[tmp_path / "c.yaml"], env_names=["HF_HOME"], inputs=[Art()], outputs=[],
        findings=[Finding("W-X", "a warning", severity="warning")], command=["python", "x.py"],
        command_cwd=tmp_path, nemo_rl_dir=None, values={},
        launch={"executor": "slurm", "profile": "lab", "env_file": "/e.toml", "host": "h"},
        config_env={"OUT": {"value": "/o", "source": "environment"}},
    )  # fmt: skip
    data = json.loads(text)
    record = RunRecord.model_validate(data)
    assert record.inputs[0].config_key == "data.train" and record.launch is not None
    assert record.launch.profile == "lab" and record.job is None
    assert list(data) == [
        "step", "version", "argv", "cwd", "config_sources", "env", "inputs", "outputs",
        "findings", "command", "command_cwd", "nemo_rl_dir", "nemo_rl_version", "config_env",
        "created_utc", "launch",
    ]  # fmt: skip


def test_a_job_record_round_trips_unchanged_with_keys_this_version_does_not_know():
    raw = {**SLURM_JOB, "secrets_file": "/srv/steps/x/.s.env", "from_a_later_version": [1, 2]}
    job = JobRecord.model_validate(raw)
    assert job.job_id == "999" and job.ssh_options == ["-p", "1"] and job.exit_code is None
    assert job.dump() == raw
    job.state, job.exit_code = "COMPLETED", 0
    assert job.dump() == {**raw, "state": "COMPLETED", "exit_code": 0}


def test_a_ray_record_holds_only_the_keys_it_was_written_with():
    raw = {"executor": "ray", "profile": "r", "address": "http://h:8265", "job_id": "steps-x"}
    assert JobRecord.model_validate(raw).dump() == raw


def test_a_numeric_job_id_reads_as_the_string_slurm_prints():
    assert job_of({"job": {**SLURM_JOB, "job_id": 999}}).job_id == "999"


def _status(tmp_path: Path, job: dict, *argv: str) -> subprocess.CompletedProcess:
    run_dir = tmp_path / "runs" / "rl" / "nemo_rl" / "dpo" / "20260101T000000Z-odd00000"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"step": "rl/nemo_rl/dpo", "job": job}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "STEPS_COMMAND_SECONDS": "5"}
    return subprocess.run(
        [sys.executable, "-m", "steps", *argv],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90,
    )  # fmt: skip


@pytest.mark.parametrize(
    "odd",
    [{"exit_code": "soon"}, {"ssh_options": "-oProxyCommand=x"}, {"executor": "local"}],
    ids=["exit_code", "ssh_options", "executor"],
)
@pytest.mark.parametrize("command", ["status", "logs", "cancel", "diagnose"])
def test_a_job_record_that_does_not_fit_its_format_is_E_RUN_RECORD(tmp_path, odd, command):
    res = _status(tmp_path, {**SLURM_JOB, **odd}, command, "last")
    assert res.returncode == 2, res.stderr
    assert "E-RUN-RECORD" in res.stderr and "Traceback" not in res.stderr
    assert f"`job.{next(iter(odd))}`" in res.stderr
