"""A run.json is data, never a source of commands (issue 27, audit cases runjson-poison-*).

A record someone else could have written (another uid's file, a file or folder others can write)
is refused by `status`, `logs`, `cancel` and `diagnose` (E-RECORD-UNTRUSTED, exit 2) and left out
of `jobs` with one warning line. Even a record of yours (a cloned runs/ folder is yours) never
supplies the ssh options: where a job runs is taken from its profile in a trusted env.toml. The
record below would run `touch MARK` through ssh's ProxyCommand if any of its options were used;
no daemon is needed to see that nothing ran: the profile points ssh at a closed port.
"""

from __future__ import annotations

import grp
import json
import os
from pathlib import Path

import pytest
from run_fixtures import steps_child

OTHER_UID = 65534  # nobody: tests run as root, which may chown to it
ENV_TOML = """[lab]
executor = "slurm"
host = "{host}"
ssh_options = ["-o", "ConnectTimeout=5", "-p", "1"]
remote_dir = "/srv/steps"
"""


def write_record(tmp_path: Path, mark: Path, name: str = "20260101T000000Z-poison0", **job) -> Path:
    """A Slurm job record whose ssh options would `touch mark`, under tmp_path/runs."""
    run_dir = tmp_path / "runs" / "rl" / "nemo_rl" / "dpo" / name
    run_dir.mkdir(parents=True)
    record = {
        "executor": "slurm", "profile": "lab", "host": "localhost",
        "ssh_options": [f"-oProxyCommand=touch {mark}"], "remote_dir": "/srv/steps",
        "job_id": "999", "job_name": "steps-dpo-poison", "job_dir": "/srv/steps/x",
        "log_path": "/srv/steps/x/slurm-999.out", "batch_output": "/srv/steps/x/slurm-999.out",
        "submitted_utc": f"2026-01-01T00:00:0{name[-1]}.000000Z", "state": "RUNNING",
        "exit_code": None, **job,
    }  # fmt: skip
    (run_dir / "run.json").write_text(json.dumps({"step": "rl/nemo_rl/dpo", "job": record}))
    return run_dir


@pytest.fixture
def steps(steps_in_process):
    """`python -m steps ARGV` from tmp_path, in this process unless `child`: ssh is the real one
    (its ProxyCommand would be a real `touch`)."""

    def call(tmp_path: Path, *argv: str, child: bool = False):
        env = {**os.environ, "STEPS_COMMAND_SECONDS": "20"}
        if child:
            return steps_child(*argv, cwd=tmp_path, env=env)
        return steps_in_process(*argv, cwd=tmp_path, env=env)

    return call


@pytest.fixture
def mark(tmp_path: Path) -> Path:
    (tmp_path / "env.toml").write_text(ENV_TOML.format(host="localhost"))
    return tmp_path / "pwned_runjson"


COMMANDS = [("jobs",), ("status", "999"), ("cancel", "last"), ("logs", "999"), ("diagnose", "999")]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0])
def test_run_json_owned_by_another_user_runs_nothing(steps, tmp_path, mark, argv):
    run_dir = write_record(tmp_path, mark)
    os.chown(run_dir / "run.json", OTHER_UID, OTHER_UID)
    # `diagnose` through the real entry point: no other test starts that command as a child
    res = steps(tmp_path, *argv, child=argv[0] == "diagnose")
    assert not mark.exists(), f"{argv}: the record's ProxyCommand ran"
    assert "Traceback" not in res.stderr
    said = f"not using {run_dir / 'run.json'}: it is owned by uid {OTHER_UID}, not by you"
    if argv == ("jobs",):
        assert res.returncode == 0, res.stderr
        warnings = [line for line in res.stderr.splitlines() if "E-RECORD-UNTRUSTED" in line]
        assert len(warnings) == 1 and said in warnings[0] and "chown" in warnings[0]
        assert "999" not in res.stdout
    else:
        assert res.returncode == 2, res.stderr
        assert "E-RECORD-UNTRUSTED" in res.stderr and said in res.stderr
        assert f"chown {os.getuid()} {run_dir / 'run.json'}" in res.stderr


def test_world_writable_run_json_is_refused(steps, tmp_path, mark):
    run_dir = write_record(tmp_path, mark)
    (run_dir / "run.json").chmod(0o666)
    res = steps(tmp_path, "status", "999")
    assert not mark.exists()
    assert res.returncode == 2 and "E-RECORD-UNTRUSTED" in res.stderr
    assert "it is writable by others" in res.stderr
    assert f"chmod go-w {run_dir / 'run.json'}" in res.stderr


@pytest.mark.parametrize("how", ["world-writable", "another user's"])
def test_a_folder_under_runs_others_can_write_makes_its_records_untrusted(
    steps, tmp_path, mark, how
):
    run_dir = write_record(tmp_path, mark)
    folder = run_dir.parent.parent  # runs/rl/nemo_rl
    if how == "world-writable":
        folder.chmod(0o777)
    else:
        os.chown(folder, OTHER_UID, OTHER_UID)
    res = steps(tmp_path, "cancel", "last")
    assert not mark.exists()
    assert res.returncode == 2 and "E-RECORD-UNTRUSTED" in res.stderr
    assert f"its folder {folder}" in res.stderr


def test_group_writable_record_is_refused_unless_the_group_is_yours_alone(steps, tmp_path, mark):
    run_dir = write_record(tmp_path, mark, state="COMPLETED", exit_code=0)
    (run_dir / "run.json").chmod(0o664)
    own = grp.getgrgid(os.getgid())
    if own.gr_name == "root" and not set(own.gr_mem) - {"root"}:  # umask 002 with a private group
        res = steps(tmp_path, "jobs")
        assert res.returncode == 0 and "E-RECORD-UNTRUSTED" not in res.stderr, res.stderr
        assert res.stdout.split()[:2] == ["999", "COMPLETED"]
    os.chown(run_dir / "run.json", os.getuid(), OTHER_UID)  # nogroup: others are in it
    res = steps(tmp_path, "status", "999")
    assert res.returncode == 2 and "is writable by its group" in res.stderr
    assert not mark.exists()


@pytest.mark.parametrize("argv", [a for a in COMMANDS if a != ("diagnose", "999")], ids=str)
def test_a_record_of_yours_never_supplies_ssh_options_the_profile_does(steps, tmp_path, mark, argv):
    """A cloned runs/ folder is yours: its records still choose no ssh option."""
    write_record(tmp_path, mark)
    res = steps(tmp_path, *argv)
    assert not mark.exists(), f"{argv}: the record's ProxyCommand ran"
    assert "Traceback" not in res.stderr
    said = res.stdout + res.stderr
    assert "localhost port 1: Connection refused" in said, said
    assert res.returncode == (0 if argv == ("jobs",) else 2), res.stderr


def test_a_record_whose_host_is_not_its_profiles_is_not_asked_about(steps, tmp_path, mark):
    (tmp_path / "env.toml").write_text(ENV_TOML.format(host="login.other.example"))
    run_dir = write_record(tmp_path, mark)
    res = steps(tmp_path, "status", "999")
    assert not mark.exists()
    assert res.returncode == 2 and "E-RECORD-PROFILE" in res.stderr, res.stderr
    assert "slurm on localhost" in res.stderr and "slurm on login.other.example" in res.stderr
    res = steps(tmp_path, "jobs")
    assert res.returncode == 0 and res.stdout.split()[:2] == ["999", "UNKNOWN"]
    assert f"{run_dir}: state unknown: the job ran with profile [lab]" in res.stderr
    assert json.loads((run_dir / "run.json").read_text())["job"]["state"] == "RUNNING"


def test_a_record_without_its_profile_is_E_RECORD_PROFILE(steps, tmp_path, mark):
    (tmp_path / "env.toml").unlink()
    write_record(tmp_path, mark)
    res = steps(tmp_path, "logs", "999")
    assert not mark.exists()
    assert res.returncode == 2 and "E-RECORD-PROFILE" in res.stderr
    assert "no env.toml found" in res.stderr


def test_jobs_lists_your_runs_and_skips_one_untrusted_record(steps, tmp_path, mark):
    write_record(tmp_path, mark, name="20260101T000000Z-mine0001", job_id="111", state="COMPLETED")
    theirs = write_record(tmp_path, mark, name="20260101T000000Z-their0002", job_id="222")
    os.chown(theirs / "run.json", OTHER_UID, OTHER_UID)
    res = steps(tmp_path, "jobs", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert [j["job_id"] for j in doc["jobs"]] == ["111"]
    assert [s["code"] for s in doc["skipped"]] == ["E-RECORD-UNTRUSTED"]
    assert not mark.exists()


def test_a_record_names_no_file_to_delete(tmp_path, mark):
    """`secrets_file` (deleted when the job ends) is always the job dir's own secrets file."""
    from runners.launch.job_secrets import secrets_path
    from runners.launch.records import locate

    write_record(tmp_path, mark)
    job = {"executor": "slurm", "profile": "lab", "host": "localhost", "job_dir": "/srv/steps/x"}
    data = {"job": {**job, "secrets_file": "/home/you/.ssh/id_ed25519"}}
    job = locate(data, {}, tmp_path)["job"]
    assert job["secrets_file"] == secrets_path("/srv/steps/x")
    assert job["ssh_options"] == ["-o", "ConnectTimeout=5", "-p", "1"]
