"""Failures named as what they are: exception classes whose names lack "Error" are still a
traceback's final line, our own code missing on a node is not a NeMo-RL version skew, and a
cluster without pyxis is a kind a retry cannot fix; `logs` of a job that never wrote its driver
log shows the batch output, `cancel` of a finished job says it had finished, and a chain whose
segment died before its own decision step shows that segment failed, with why (real Slurm)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from cluster_fixtures import slurm, sshd, wait_for  # noqa: F401
from test_launch_slurm import lab, write_env_toml  # noqa: F401

from runners.launch import job_code
from runners.monitor.classify import LogClassifier, diagnose
from runners.monitor.logscan import python_prefilter


def _diagnose(log: str, state: str = "FAILED"):
    classifier = LogClassifier()
    for number, line in python_prefilter(io.BytesIO(log.encode())):
        classifier.feed("ray-driver.log", number, line)
    return diagnose(classifier, state, 1, "sacct")


@pytest.mark.parametrize(
    "last_line",
    [
        "omegaconf.errors.UnsupportedInterpolationType: Unsupported interpolation type mul",
        "KeyboardInterrupt",
        "torch.distributed.DistBackendException: NCCL communicator was aborted",
        "ray.exceptions.RaySystemFailure: System error: the GCS is gone",
        "nemo_rl.checks.ShapeMismatch: logits (8, 4096) vs labels (8, 4095)",
    ],
)
def test_an_exception_name_without_error_is_the_failure_line(last_line):
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/nemo-rl/run.py", line 9, in main\n'
        "    step()\n"
        f"{last_line}\n"
    )
    got = _diagnose(log)
    assert got.kind == "python_exception"
    assert got.message == last_line
    assert any("run.py:9 in main" in e.text for e in got.evidence)


@pytest.mark.parametrize(
    "line",
    [
        "/usr/bin/python3: No module named steps",
        "ModuleNotFoundError: No module named 'steps'",
        "ModuleNotFoundError: No module named 'runners.chain'",
        "ModuleNotFoundError: No module named 'catalog'",
        "ModuleNotFoundError: No module named 'pydantic'",
    ],
)
def test_our_own_code_missing_on_the_node_is_not_version_skew(line):
    got = _diagnose(f"{line}\n")
    assert got.kind == "job_code_missing" and not got.retryable
    assert "steps_launcher" in got.fix


@pytest.mark.parametrize(
    "line",
    [
        "ModuleNotFoundError: No module named 'vllm.entrypoints.openai.engine'",
        "ModuleNotFoundError: No module named 'stepsize_utils'",
        "ModuleNotFoundError: No module named 'pydantic_settings'",
    ],
)
def test_a_missing_module_of_nemo_rl_stays_version_skew(line):
    assert _diagnose(f"{line}\n").kind == "version_skew"


def test_srun_without_pyxis_is_its_own_kind_that_a_retry_cannot_fix():
    got = _diagnose(
        "srun: unrecognized option '--container-image=nvcr.io/nvidia/nemo-rl:v0.7.0'\n"
        "[ERROR] Background srun 'ray-head' died\n"
    )
    assert got.kind == "no_container_support" and not got.retryable
    assert "pyxis" in got.fix


def test_another_unrecognized_srun_option_is_not_a_missing_pyxis():
    assert _diagnose("srun: unrecognized option '--gpus-per-task=8'\n").kind == "unknown"


def test_logs_of_an_ended_job_without_a_driver_log_shows_the_batch_output(lab):  # noqa: F811
    *_, cli = lab
    job_id, log = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab").stdout.split()
    wait_for(lambda: '"COMPLETED"' in cli("status", job_id, "--json").stdout, timeout=90)
    Path(log).unlink()  # as when the job died before ray.sub started the driver
    out = Path(log).parent.parent / f"slurm-{job_id}.out"
    out.write_text(out.read_text() + "srun: unrecognized option '--no-container-mount-home'\n")
    res = cli("logs", job_id)
    assert res.returncode == 0, res.stderr
    assert f"the driver log {log} was never written" in res.stderr
    assert f"showing the batch output {out}" in res.stderr
    assert "unrecognized option '--no-container-mount-home'" in res.stdout


def test_cancel_of_a_finished_job_says_it_had_finished(lab):  # noqa: F811
    *_, cli = lab
    job_id = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab").stdout.split()[0]
    wait_for(lambda: '"COMPLETED"' in cli("status", job_id, "--json").stdout, timeout=90)
    res = cli("cancel", job_id)
    assert res.returncode == 0, res.stderr
    assert f"job {job_id} had already finished: COMPLETED (exit code 0)" in res.stdout
    assert "cancel requested" not in res.stdout


def test_a_chain_segment_that_died_before_its_decision_step_shows_failed_with_why(lab):  # noqa: F811
    root, work, _env, cli = lab
    write_env_toml(work, root, extra='save_margin = "00:04:00"\nsbatch_args = ["--begin=now+3"]\n')
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab", "--until-done")
    assert res.returncode == 0, res.stderr
    job = json.loads(cli("status", "last", "--json").stdout)["job"]
    Path(job_code.segment_program(job["job_dir"])).unlink()  # its `begin` cannot run now
    wait_for(lambda: '"FAILED"' in cli("status", "last", "--json").stdout, timeout=90)
    res = cli("status", "last")
    assert "chain queued" not in res.stdout, res.stdout
    assert "chain stopped (segment 1 (job " in res.stdout
    assert "ended FAILED (exit code 2) before its decision step ran" in res.stdout
    chain = json.loads(cli("status", "last", "--json").stdout)["chain"]
    assert chain["state"] == "stopped" and chain["next_job_id"] is None
    [seg] = chain["segments"]
    assert seg["job_id"] == job["job_id"] and (seg["state"], seg["exit_code"]) == ("FAILED", 2)
    assert "before its decision step ran" in seg["failure"]["evidence"]
