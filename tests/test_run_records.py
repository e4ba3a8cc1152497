"""run.json and its job record have one format each (runners/rundir.py RunRecord, JobRecord).

What `run` writes fits RunRecord; a job record round-trips unchanged, keys this version does not
know included; a job record that does not fit its format is E-RUN-RECORD (exit 2) in every job
command, never a traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from run_fixtures import clean_env

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


def _plant(tmp_path: Path, job: dict) -> None:
    run_dir = tmp_path / "runs" / "rl" / "nemo_rl" / "dpo" / "20260101T000000Z-odd00000"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"step": "rl/nemo_rl/dpo", "job": job}))


@pytest.mark.parametrize(
    "odd",
    [{"exit_code": "soon"}, {"ssh_options": "-oProxyCommand=x"}, {"executor": "local"}],
    ids=["exit_code", "ssh_options", "executor"],
)
@pytest.mark.parametrize("command", ["status", "logs", "cancel", "diagnose"])
def test_a_job_record_that_does_not_fit_its_format_is_E_RUN_RECORD(
    tmp_path, odd, command, steps_in_process
):
    _plant(tmp_path, {**SLURM_JOB, **odd})
    env = {**os.environ, "STEPS_COMMAND_SECONDS": "5"}
    res = steps_in_process(command, "last", cwd=tmp_path, env=env)
    assert res.returncode == 2, res.stderr
    assert "E-RUN-RECORD" in res.stderr and "Traceback" not in res.stderr
    assert f"`job.{next(iter(odd))}`" in res.stderr


# run.json's `job` as the backends wrote it before they returned a JobRecord (a dict in the
# order they built it), and as `update_record` writes it: the bytes a typed record must keep.
OLD_RUN_JSON = """{
  "step": "rl/nemo_rl/dpo",
  "version": "1",
  "job": {
    "executor": "slurm",
    "profile": "lab",
    "host": "localhost",
    "ssh_options": [
      "-p",
      "1"
    ],
    "remote_dir": "/srv/steps",
    "job_id": "999",
    "job_name": "steps-dpo-x",
    "job_dir": "/srv/steps/x",
    "log_template": "/srv/steps/x/%j-logs/ray-driver.log",
    "log_path": "/srv/steps/x/999-logs/ray-driver.log",
    "batch_output": "/srv/steps/x/slurm-999.out",
    "submitted_utc": "2026-01-01T00:00:00.000000Z",
    "state": "PENDING",
    "exit_code": null,
    "secrets_file": "/srv/steps/x/.steps-secrets.env",
    "submit_note": "sbatch on localhost refused the job: x; but Slurm queued it as job 999 (found by name)",
    "from_a_later_version": {
      "a": 1
    }
  },
  "final_progress": null
}
"""  # noqa: E501


def test_a_run_json_written_before_typed_records_is_written_back_byte_for_byte(tmp_path):
    from runners.rundir import read_record, update_record

    (tmp_path / "run.json").write_text(OLD_RUN_JSON, encoding="utf-8")
    job = job_of(read_record(tmp_path), tmp_path)
    assert job.submit_note and job.model_extra == {"from_a_later_version": {"a": 1}}
    update_record(tmp_path, job=job.dump())
    assert (tmp_path / "run.json").read_text(encoding="utf-8") == OLD_RUN_JSON


def _request(tmp_path: Path, secrets: list[str]):
    from runners.launch.request import LaunchRequest

    run_dir = tmp_path / "20260101T000000Z-abc"
    return LaunchRequest(
        step_id="rl/nemo_rl/dpo", runner="nemo_rl", run_dir=run_dir, job_dir="/srv/steps/x",
        command=["python", "x.py"], cwd="/opt/nemo-rl", secret_names=secrets, uses_ray_sub=True,
    )  # fmt: skip


def test_a_slurm_backend_returns_its_record_typed_in_the_keys_and_order_run_json_had(tmp_path):
    from runners.launch.profiles.env_toml import SlurmProfile
    from runners.launch.slurm.backend import SlurmBackend

    profile = SlurmProfile(executor="slurm", host="login", remote_dir="/srv/steps")
    backend = SlurmBackend("lab", profile, env={})
    job = backend.job_record(_request(tmp_path, ["WANDB_API_KEY"]))
    assert isinstance(job, JobRecord) and job.job_name == "steps-dpo-20260101T000000Z-abc"
    assert list(job.dump()) == [
        "executor", "profile", "host", "ssh_options", "remote_dir", "job_id", "job_name",
        "job_dir", "log_template", "log_path", "batch_output", "submitted_utc", "state",
        "exit_code", "secrets_file",
    ]  # fmt: skip
    assert job.dump()["job_id"] is None and job.dump()["state"] == "SUBMITTING"
    backend._identified(job, "42")
    assert (job.state, job.log_path) == ("PENDING", "/srv/steps/x/42-logs/ray-driver.log")
    assert job.batch_output == "/srv/steps/x/slurm-42.out"
    job.forget("secrets_file")
    assert "secrets_file" not in job.dump() and job.secrets_file is None
    assert "secrets_file" not in backend.job_record(_request(tmp_path, [])).dump()


def test_a_ray_backend_returns_its_record_typed_in_the_keys_and_order_run_json_had(tmp_path):
    from runners.launch.profiles.env_toml import RayProfile
    from runners.launch.ray.backend import RayBackend

    backend = RayBackend("r", RayProfile(executor="ray", address="http://h:8265"))
    job = backend.job_record(_request(tmp_path, []))
    assert isinstance(job, JobRecord) and job.job_id == "steps-dpo-20260101t000000z-abc"
    assert list(job.dump()) == [
        "executor", "profile", "address", "job_id", "job_dir", "log_path", "submitted_utc",
        "state", "exit_code",
    ]  # fmt: skip


def test_a_job_shown_unknown_keeps_its_last_state_and_says_why_last():
    from runners.launch.jobs import _saved
    from runners.launch.request import UNKNOWN, unknown

    job = JobRecord.model_validate(SLURM_JOB)
    shown = unknown(job, "ssh: no route to host")
    assert (shown.state, shown.last_known_state, shown.reason) == (
        UNKNOWN, "RUNNING", "ssh: no route to host",
    )  # fmt: skip
    assert list(shown.dump())[-3:] == ["exit_code", "last_known_state", "reason"]
    assert job.state == "RUNNING"  # the record itself is unchanged
    assert _saved(shown).dump() == SLURM_JOB  # run.json keeps the last known state, no why


def test_an_in_process_run_yields_what_it_registered_before_done_and_prints_nothing(
    tmp_path, capsys
):
    from runners.run import RunRequest, plan_run
    from runners.run.execute import Done, HandingOver, Registered, execute

    out = tmp_path / "out"
    req = RunRequest(step="data_prep/rl_prep", config="tiny", runs_dir=str(tmp_path / "runs"),
                     overrides=[f"output_dir={out}", "sample=20"])  # fmt: skip
    plan = plan_run(req, cwd=tmp_path, env=clean_env(tmp_path), argv=["steps", "run"])
    events = list(execute(plan, None))
    assert [type(e) for e in events[-3:]] == [HandingOver, Registered, Done]
    registered, done = events[-2], events[-1]
    [reg] = registered.report["registered"]
    assert (reg["artifact"], reg["path"], reg["new"]) == (
        "DataBlendsArtifact-rl:v0",
        str(out),
        True,
    )
    assert done.code == 0 and done.summary["artifacts"] == registered.report
    assert "registered" not in capsys.readouterr().err  # the CLI renders it, not runners
