"""The CLI parses and renders; `runners` does (issue 28 item 5).

`run`'s command line is parsed once, options anywhere among the overrides, and the job commands'
data (the `jobs` rows, a run's live job) come from runners functions a test calls without the
CLI: no subprocess, no argparse.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ENV_TOML = """[lab]
executor = "slurm"
host = "localhost"
ssh_options = ["-o", "ConnectTimeout=5", "-p", "1"]
remote_dir = "/srv/steps"
"""


def test_run_options_after_the_overrides_are_taken_in_the_one_parse():
    from steps.cli import build_parser

    args = build_parser("run").parse_args(
        ["run", "rl/nemo_rl/dpo", "a=1", "--dry-run", "-c", "tiny", "b=2", "--input=x=y"]
    )
    assert (args.step, args.overrides, args.dry_run) == ("rl/nemo_rl/dpo", ["a=1", "b=2"], True)
    assert (args.config, args.input) == ("tiny", ["x=y"])


def test_run_and_batch_after_an_override_are_still_exclusive():
    from steps.cli import UsageError, build_parser

    with pytest.raises(UsageError, match="not allowed with argument --run"):
        build_parser("run").parse_args(["run", "dpo", "--run", "a", "x=1", "--batch", "b"])


def _ended_run(tmp_path: Path) -> Path:
    """A Slurm run whose job ended, its progress kept in run.json (no cluster is asked)."""
    run_dir = tmp_path / "runs" / "rl" / "nemo_rl" / "dpo" / "20260101T000000Z-ended00"
    run_dir.mkdir(parents=True)
    job = {
        "executor": "slurm", "profile": "lab", "host": "localhost", "remote_dir": "/srv/steps",
        "job_id": "41", "job_name": "steps-dpo-ended", "job_dir": "/srv/steps/x",
        "log_path": "/srv/steps/x/slurm-41.out", "submitted_utc": "2026-01-01T00:00:00.000000Z",
        "state": "COMPLETED", "exit_code": 0,
    }  # fmt: skip
    record = {"step": "rl/nemo_rl/dpo", "job": job, "final_progress": {"step": 3, "max_steps": 3}}
    (run_dir / "run.json").write_text(json.dumps(record))
    return run_dir


def test_jobs_rows_are_a_runners_function_returning_the_listing(tmp_path, monkeypatch):
    from runners.run.job_view import job_rows, listed_runs

    (tmp_path / "env.toml").write_text(ENV_TOML)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STEPS_ENV_FILE", raising=False)
    run_dir = _ended_run(tmp_path)
    skipped: list = []
    rows = job_rows(listed_runs(tmp_path / "runs", skipped))
    assert skipped == [] and len(rows) == 1
    row = rows[0].to_dict()
    assert (row["run_dir"], row["step"], row["state"]) == (
        str(run_dir),
        "rl/nemo_rl/dpo",
        "COMPLETED",
    )
    assert row["progress"]["step"] == 3 and rows[0].progress.line().startswith("step 3 of 3")
    assert "chain" not in row


def test_a_run_never_submitted_has_no_job_to_follow(tmp_path):
    from catalog.errors import StepsError
    from runners.launch.submit import follow
    from runners.rundir import JobRecord

    job = JobRecord(executor="slurm", reason="sbatch timed out")
    with pytest.raises(StepsError) as caught:
        follow(tmp_path, job, until_done=True)
    assert caught.value.finding.code == "E-RUN-NO-JOB" and "sbatch timed out" in str(
        caught.value.finding.message
    )
