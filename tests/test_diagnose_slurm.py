"""`diagnose`, `status` and `jobs` on real Slurm jobs (the one-node lab of cluster_fixtures):
a job whose stand-in driver prints a NeMo-RL log with a GPU OOM and fails, named from its real
driver log and the scheduler's state; one cancelled mid-way; `status --watch`; logs grepped over
a real ssh."""

from __future__ import annotations

import json
from pathlib import Path

from cluster_fixtures import left_the_queue, log_says, slurm, sshd, wait_for  # noqa: F401
from test_launch_slurm import lab, write_env_toml  # noqa: F401

from runners.launch.observe import scan_logs
from runners.monitor.classify import LogClassifier, diagnose
from runners.rundir import JobRecord

CORPUS = Path(__file__).resolve().parent / "data" / "failures"
OOM_LOG = CORPUS / "gpu_oom_in_get_logprobs" / "ray-driver.log"


def _failed_oom_job(root: Path, work: Path, env: dict[str, str], cli, extra: str = "") -> str:
    write_env_toml(work, root, extra=extra, FAKE_LOG_FILE=str(OOM_LOG), FAKE_EXIT="1")
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab")
    assert res.returncode == 0, res.stderr
    job_id = res.stdout.split()[0]
    left_the_queue(env, job_id)
    wait_for(lambda: '"FAILED"' in cli("status", job_id, "--json").stdout, timeout=90)
    return job_id


def test_a_failed_job_is_named_from_its_driver_log_and_slurm_state(lab):  # noqa: F811
    root, work, env, cli = lab
    ckpt = Path(env["STEPS_OUTPUT"]) / "dpo" / "checkpoints"
    (ckpt / "step_2").mkdir(parents=True)
    (ckpt / "step_2" / "training_info.json").write_text('{"epoch": 0, "step": 2, "total_steps": 2}')
    (ckpt / "tmp_step_3").mkdir()  # a save cut short is never a step reached
    job_id = _failed_oom_job(root, work, env, cli)
    res = cli("diagnose", job_id, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["kind"] == "gpu_oom" and doc["retryable"] is False
    assert doc["method"] == "DTensorPolicyWorkerV2.get_logprobs"
    assert "policy.logprob_chunk_size" in doc["fix"]
    assert doc["state"] == "FAILED" and doc["exit_code"] == 1
    assert doc["step"] == 3  # the driver log's third finished step (past the checkpoint's 2)
    first = doc["evidence"][0]
    assert first["path"].endswith(f"/{job_id}-logs/ray-driver.log")
    text = Path(first["path"]).read_text().splitlines()[first["line"] - 1]
    assert text.startswith("Traceback")
    human = cli("diagnose", "last")
    assert "failure: gpu_oom (GPU out of memory); a retry can help: no" in human.stdout
    assert "ray-driver.log:" in human.stdout and "fix: policy.logprob_chunk_size" in human.stdout
    status = cli("status", job_id)
    assert "progress: step 3 of 3, reward 0.35, 41s/step" in status.stdout
    assert json.loads(cli("jobs", "--json").stdout)["jobs"][0]["progress"]["step"] == 3
    assert "FAILED" in cli("jobs").stdout.splitlines()[0]
    assert "step 3 of 3, reward 0.35" in cli("jobs").stdout.splitlines()[0]


def test_status_watch_refreshes_until_the_job_ends(lab):  # noqa: F811
    root, work, _env, cli = lab
    env = {"FAKE_TICKS": "6", "FAKE_TICK_SECONDS": "0.25", "FAKE_LOG_FILE": str(OOM_LOG)}
    write_env_toml(work, root, **env)
    job_id = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab").stdout.split()[0]
    res = cli("status", job_id, "--watch", "--interval", "0.3")
    assert res.returncode == 0, res.stderr
    refreshes = [line for line in res.stdout.splitlines() if line[:2].isdigit()]
    assert refreshes and refreshes[-1].split()[1] == "COMPLETED:"


def test_a_cancelled_job_is_named_cancelled_and_not_retryable(lab):  # noqa: F811
    root, work, env, cli = lab
    write_env_toml(work, root, FAKE_TICKS="300", FAKE_TICK_SECONDS="0.2")
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab")
    job_id, log = res.stdout.split()
    wait_for(lambda: log_says(log, "tick 1"), timeout=90)
    wait_for(lambda: "tick 1" in cli("logs", job_id).stdout, timeout=90)
    running = json.loads(cli("diagnose", job_id, "--json").stdout)
    assert running["kind"] is None and running["state"] == "RUNNING"
    cli("cancel", job_id)
    left_the_queue(env, job_id, timeout=60)
    wait_for(lambda: '"CANCELLED"' in cli("status", job_id, "--json").stdout, timeout=60)
    doc = json.loads(cli("diagnose", job_id, "--json").stdout)
    assert doc["kind"] == "cancelled" and doc["retryable"] is False


def test_over_ssh_the_logs_are_grepped_on_the_cluster_side(sshd):  # noqa: F811
    """Only matching lines cross ssh: the same classification as reading the files here."""
    host, options = sshd
    case = CORPUS / "host_oom_killed_by_cgroup"
    job = {"executor": "slurm", "host": host, "ssh_options": options, "job_id": "5120"}
    job["log_path"] = str(case / "ray-driver.log")
    job["batch_output"] = str(case / "slurm-5120.out")
    remote = LogClassifier()
    scan_logs(JobRecord.model_validate(job), remote)
    local = LogClassifier()
    scan_logs(JobRecord.model_validate({**job, "host": None}), local)
    got = diagnose(remote, "FAILED", 1, "sacct")
    assert got.kind == "host_oom" and got.evidence[0].path == job["batch_output"]
    assert got == diagnose(local, "FAILED", 1, "sacct")
