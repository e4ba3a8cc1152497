"""Lost contact, bounded waits and submissions that fail halfway, on real components: the
one-node Slurm (with slurmdbd accounting when installed), an sshd of its own that is stopped
while a job is followed, a slurmctld that is stopped while a job is followed, real sbatch
behind a wrapper that queues the job and then hangs or lies, real rsync and ssh.

A followed job whose cluster stops answering is E-REMOTE-LOST, exit 2, never "ended"; a state
that cannot be learnt is UNKNOWN with why (run.json keeps the last known); a queued job always
has its record in run.json, found by its unique name when sbatch did not say.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_fixtures import (  # noqa: F401
    controller_stopped,
    left_the_queue,
    restart_sshd,
    slurm,
    sshd,
    start_sshd,
    stop_sshd,
    wait_for,
)
from run_fixtures import REPO
from test_launch_slurm import lab, write_env_toml  # noqa: F401

from catalog.errors import StepsError
from runners.launch.shell import Shell

TICKING = {"FAKE_TICKS": "300", "FAKE_TICK_SECONDS": "0.2"}


def ssh_extra(host: str, options: list[str]) -> str:
    opts = ", ".join(f'"{o}"' for o in options)
    return f'host = "{host}"\nssh_options = [{opts}]\n'


def started(work: Path, env: dict, *argv: str) -> subprocess.Popen:
    """`python -m steps ARGV` in a child process, read until the job's first tick."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "steps", *argv], cwd=work, text=True,
        env={**env, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("tick 1"):
            return proc
    pytest.fail(f"the job never ticked: {proc.communicate(timeout=30)[1]}")


def saved_job(work: Path) -> dict:
    record = next((work / "runs").rglob("run.json"))
    return json.loads(record.read_text())["job"]


@pytest.fixture
def own_sshd(tmp_path, slurm):  # noqa: F811
    """An sshd for this test alone (the test stops it)."""
    host, options, pid_file = start_sshd(tmp_path / "sshd", slurm["SLURM_CONF"])
    yield host, options, pid_file
    stop_sshd(pid_file)


def test_an_ssh_drop_while_following_is_lost_contact_exit_2_and_not_an_end(lab, own_sshd):  # noqa: F811
    root, work, env, cli = lab
    host, options, pid_file = own_sshd
    write_env_toml(work, root, extra=ssh_extra(host, options), **TICKING)
    attached = started(work, env, "run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab")
    following = started(work, env, "logs", "last", "-f")
    stop_sshd(pid_file)
    run_dir = next((work / "runs").rglob("run.json")).parent
    for proc in (attached, following):
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, err
        assert (
            f"E-REMOTE-LOST lost contact with {host}, the job may still run; re-attach with "
            f"`python -m steps logs {run_dir} -f`" in err
        )
        assert "closed by remote host" in err  # ssh's own words are kept
        assert "ended:" not in err and "Traceback" not in err
    # The host is gone: status says the state is unknown, and run.json keeps the last known.
    res = cli("status", "last", "--json")
    job = json.loads(res.stdout)["job"]
    assert res.returncode == 2 and job["state"] == "UNKNOWN"
    assert f"cannot reach {host} over ssh" in job["reason"]
    assert saved_job(work)["state"] == job["last_known_state"] != "UNKNOWN"
    restart_sshd(pid_file.parent, options)
    res = cli("status", "last", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["job"]["state"] == "RUNNING"
    subprocess.run(["scancel", job["job_id"]], env=env, check=True)


def test_a_controller_outage_bounds_the_follow_and_only_a_recorded_end_counts(lab, slurm):  # noqa: F811
    root, work, env, cli = lab
    env.update(STEPS_SILENT_SECONDS="1", STEPS_SLURM_CALL_SECONDS="0.5")
    finished = None
    if slurm["accounting"]:  # a job that ends before the outage: only accounting can tell
        write_env_toml(work, root, FAKE_EXIT="3")
        finished, log = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab").stdout.split()
    write_env_toml(work, root, **TICKING)
    proc = started(work, env, "run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab")
    if finished:
        sacct = ["sacct", "-n", "-X", "-P", "-o", "State", "-j", finished]
        wait_for(lambda: subprocess.run(sacct, env=env, capture_output=True, text=True)
                 .stdout.strip() == "FAILED", timeout=60)  # fmt: skip
        for out in Path(log).parent.parent.glob("slurm-*.out"):
            out.unlink()  # the batch output's exit line cannot answer for it
    with controller_stopped(slurm):
        start = time.monotonic()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, err
        assert time.monotonic() - start < 30
        assert "E-REMOTE-LOST lost contact with Slurm on this machine, the job may still run; " \
            "re-attach with `python -m steps logs" in err  # fmt: skip
        assert "Unable to contact slurm controller" in err or "did not answer within 0.5 s" in err
        assert "ended:" not in err
        res = cli("status", "last", "--json")
        job = json.loads(res.stdout)["job"]
        # accounting still says RUNNING, but nothing updates it while slurmctld is down
        assert res.returncode == 2 and job["state"] == "UNKNOWN", job
        assert job["last_known_state"] in ("PENDING", "RUNNING")
        res = cli("cancel", "last")
        assert res.returncode == 2 and "E-CANCEL scancel" in res.stderr
        if finished:  # its end is in accounting: that is an answer
            res = cli("status", finished, "--json")
            done = json.loads(res.stdout)["job"]
            assert res.returncode == 0 and (done["state"], done["exit_code"]) == ("FAILED", 3)
    res = cli("status", "last", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["job"]["state"] == "RUNNING"
    assert cli("cancel", "last").returncode == 0


def sbatch_wrapper(tmp_path: Path, env: dict, body: str) -> None:
    """An `sbatch` first on PATH: `body` runs with $REAL, the real sbatch."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "sbatch"
    wrapper.write_text(f"#!/bin/bash\nREAL={shutil.which('sbatch')}\n{body}\n", encoding="utf-8")
    wrapper.chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["STEPS_SUBMIT_SECONDS"] = "2"


@pytest.mark.parametrize(
    "body",
    [
        '"$REAL" "$@"; sleep 30',  # queued, then no answer
        '"$REAL" "$@" >/dev/null; echo "sbatch: error: Batch job submission failed: Socket '
        'timed out on send/recv operation" >&2; exit 1',  # queued, then a failure
    ],
    ids=["queued-then-silent", "queued-then-error"],
)
def test_a_job_queued_by_a_failing_sbatch_is_found_by_its_name_and_recorded(lab, tmp_path, body):  # noqa: F811
    _root, work, env, cli = lab
    sbatch_wrapper(tmp_path, env, body)
    start = time.monotonic()
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab")
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - start < 20
    assert "but Slurm queued it as job" in res.stderr
    job = saved_job(work)
    named = subprocess.run(
        ["squeue", "-h", "-t", "all", f"--name={job['job_name']}", "-o", "%A"],
        env=env, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    assert named == [job["job_id"]] and res.stdout.split()[0] == job["job_id"]
    assert job["log_path"] == f"{job['job_dir']}/{job['job_id']}-logs/ray-driver.log"
    left_the_queue(env, job["job_id"])
    wait_for(lambda: '"COMPLETED"' in cli("status", "last", "--json").stdout, timeout=90)


def test_an_sbatch_that_never_answers_leaves_a_record_that_status_looks_up(lab, tmp_path):  # noqa: F811
    _root, work, env, cli = lab
    sbatch_wrapper(tmp_path, env, "sleep 30")
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab")
    assert res.returncode == 2 and "E-SUBMIT sbatch on this machine did not finish within 2 s" \
        in res.stderr  # fmt: skip
    job = saved_job(work)
    assert job["state"] == "SUBMITTING" and job["job_id"] is None and job["job_name"]
    res = cli("status", "last", "--json")
    shown = json.loads(res.stdout)["job"]
    assert res.returncode == 0 and shown["state"] == "SUBMITTING"
    assert f"no job named {job['job_name']} is known to Slurm" in shown["reason"]
    res = cli("logs", "last")
    assert res.returncode == 2 and "E-RUN-NO-JOB the submission of" in res.stderr
    res = cli("cancel", "last")
    assert res.returncode == 2 and "E-CANCEL no job to cancel" in res.stderr


def test_a_refused_sbatch_is_E_SUBMIT_and_leaves_no_run_dir(lab):  # noqa: F811
    root, work, _env, cli = lab
    # A constraint only the controller can judge: preflight passes, sbatch refuses.
    write_env_toml(work, root, extra='sbatch_args = ["--constraint=nosuchfeature"]\n')
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab")
    assert res.returncode == 2, res.stderr
    assert "E-SUBMIT sbatch on this machine refused the job: sbatch: error:" in res.stderr
    assert not (work / "runs").exists() and not list((root / "shared").rglob("*.env"))
    assert json.loads(cli("jobs", "--json").stdout)["jobs"] == []


def test_a_run_dir_that_cannot_be_staged_is_E_REMOTE_STAGE_and_nothing_is_queued(lab, sshd):  # noqa: F811
    root, work, _env, cli = lab
    host, options = sshd
    (root / "afile").write_text("a file where remote_dir wants a folder\n")
    write_env_toml(work, root, extra=ssh_extra(host, options))
    toml = (work / "env.toml").read_text().replace(f'"{root}/shared"', f'"{root}/afile/shared"')
    (work / "env.toml").write_text(toml)
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab")
    # The probe (over ssh) finds it before anything is written or queued, as a dry run does.
    assert res.returncode == 1 and "E-REMOTE-STAGE the run dir cannot be staged" in res.stderr
    assert f"{root}/afile is not a writable folder on {host}" in res.stderr
    assert "nothing written or submitted" in res.stderr and "Traceback" not in res.stderr
    assert not (work / "runs").exists()


def test_without_rsync_here_an_ssh_profile_is_refused_by_the_dry_run_as_by_the_submit(
    lab,  # noqa: F811
    sshd,  # noqa: F811
    tmp_path,
):
    root, work, env, cli = lab
    host, options = sshd
    write_env_toml(work, root, extra=ssh_extra(host, options))
    bare = tmp_path / "bin-without-rsync"  # this machine's PATH, rsync left out
    bare.mkdir()
    for folder in env["PATH"].split(os.pathsep):
        for tool in Path(folder).glob("*") if Path(folder).is_dir() else ():
            if tool.name != "rsync" and not (bare / tool.name).exists():
                (bare / tool.name).symlink_to(tool)
    env["PATH"] = str(bare)
    for dry in (("--dry-run",), ()):
        res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab", *dry)
        said = res.stdout + res.stderr
        assert res.returncode == 1 and "E-REMOTE-STAGE" in said, said
        assert "rsync is not installed here" in said and "Fix: install rsync here" in said
    assert not (work / "runs").exists() and not (root / "shared").exists()


def test_without_rsync_on_the_host_an_ssh_profile_is_refused_before_anything_is_written(
    lab,  # noqa: F811
    slurm,  # noqa: F811
    tmp_path,
):
    root, work, _env, cli = lab
    bare = tmp_path / "host-bin"  # the host's PATH: Slurm's clients, bash, coreutils; no rsync
    bare.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in Path(folder).glob("*"):
            if tool.name != "rsync" and not (bare / tool.name).exists():
                (bare / tool.name).symlink_to(tool)
    host, options, pid_file = start_sshd(
        tmp_path / "sshd", slurm["SLURM_CONF"], {"PATH": str(bare)}
    )
    try:
        write_env_toml(work, root, extra=ssh_extra(host, options))
        res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab", "--dry-run")
    finally:
        stop_sshd(pid_file)
    said = res.stdout + res.stderr
    assert res.returncode == 1 and f"rsync is not installed on {host}" in said, said
    assert f"Fix: install rsync on {host}" in said


def test_one_unreachable_record_does_not_break_jobs(lab):  # noqa: F811
    _root, work, _env, cli = lab
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab")
    real_id = res.stdout.split()[0]
    gone = work / "runs" / "rl" / "nemo_rl" / "dpo" / "20260101T000000Z-gone0000"
    gone.mkdir(parents=True)
    record = {"step": "rl/nemo_rl/dpo", "job": {
        "executor": "slurm", "profile": "far", "host": "root@127.0.0.1",
        "ssh_options": ["-p", "1"], "job_id": "424242", "job_name": "steps-dpo-gone",
        "log_path": "/x/slurm-424242.out", "submitted_utc": "2026-01-01T00:00:00.000000Z",
        "state": "RUNNING", "exit_code": None}}  # fmt: skip
    (gone / "run.json").write_text(json.dumps(record))
    with (work / "env.toml").open("a") as toml:  # where a job runs is its profile's to say
        toml.write('\n[far]\nexecutor = "slurm"\nhost = "root@127.0.0.1"\n'
                   'ssh_options = ["-p", "1"]\nremote_dir = "/x"\n')  # fmt: skip
    res = cli("jobs")
    assert res.returncode == 0, res.stderr
    lines = {line.split()[0]: line.split()[1] for line in res.stdout.splitlines()}
    assert lines["424242"] == "UNKNOWN" and lines[real_id] in ("PENDING", "RUNNING", "COMPLETED")
    assert f"{gone}: state unknown: cannot reach root@127.0.0.1 over ssh" in res.stderr
    assert json.loads((gone / "run.json").read_text())["job"]["state"] == "RUNNING"


def test_a_stage_that_hangs_is_E_REMOTE_STAGE_within_its_bound(tmp_path):
    if shutil.which("rsync") is None or shutil.which("ssh") is None:
        pytest.skip("rsync or ssh is not installed: apt-get install rsync openssh-client")
    env = {**os.environ, "STEPS_STAGE_SECONDS": "1"}
    shell = Shell("nobody@192.0.2.1", ["-o", "ProxyCommand=sleep 30"], env)
    start = time.monotonic()
    with pytest.raises(StepsError) as err:
        shell.copy_dir(tmp_path, "/srv/runs/x")
    assert time.monotonic() - start < 10
    assert err.value.exit_code == 2 and err.value.finding.code == "E-REMOTE-STAGE"
    assert "rsync did not finish within 1 s" in err.value.finding.message


def test_a_local_command_that_hangs_names_what_did_not_finish(tmp_path):
    shell = Shell(None, env={**os.environ, "STEPS_COMMAND_SECONDS": "1"})
    start = time.monotonic()
    with pytest.raises(StepsError) as err:
        shell.run("sleep 30 &\nsleep 30\n", what="the probe (test -e, sinfo)")
    assert time.monotonic() - start < 10  # the backgrounded sleep holds no pipe open for us
    message = err.value.finding.message
    assert message == "the probe (test -e, sinfo) on this machine did not finish within 1 s"
    assert err.value.exit_code == 2
