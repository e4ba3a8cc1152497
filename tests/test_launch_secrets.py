"""How secrets travel to a Slurm job: a 0600 file the driver reads and removes, never the job's env.

Real bash runs the submit side's sbatch line and the driver side's read; a real one-node Slurm
runs the jobs (the stand-in ray.sub dumps its whole environment into ray-head.log, as NeMo-RL
v0.6.0 does).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from cluster_fixtures import NO_JUDGE, slurm, stand_in_checkout, wait_for  # noqa: F401
from run_fixtures import clean_env, steps_cli
from test_launch_slurm import write_env_toml

from runners.launch import job_secrets
from runners.launch.shell import Shell
from runners.secrets import SWITCH_VALUES, holds_secret, is_secret_env, secret_values

# name -> (value, holds a secret?)
NAMES = {
    "HF_TOKEN": ("hf_0123456789abcdef", True),
    "WANDB_API_KEY": ("0123456789abcdef0123", True),
    "AWS_SECRET_ACCESS_KEY": ("abc/def+ghi", True),
    "NGC_KEY": ("nvapi-xyz", True),
    "DB_PASS": ("hunter22", True),
    "apiKey": ("camel-case-value", True),
    "NCCL_IB_PKEY": ("0x8001", False),  # PKEY is a word of its own
    "TOKENIZERS_PARALLELISM": ("false", False),
    "KEYTAB_PATH": ("/etc/krb5.keytab", False),
    "HF_HUB_DISABLE_TOKEN": ("1", False),  # a switch value: a setting, not a credential
    "WANDB_DISABLE_KEY_CHECK": (" True ", False),
    "PATH": ("/usr/bin:/bin", False),
}


def test_secret_names_are_decided_by_word_and_a_switch_value_holds_no_secret():
    assert {n for n, (v, _) in NAMES.items() if holds_secret(n, v)} == {
        n for n, (_, secret) in NAMES.items() if secret
    }
    assert is_secret_env("HF_HUB_DISABLE_TOKEN") and not holds_secret("HF_HUB_DISABLE_TOKEN", "1")
    assert "1" not in secret_values({"HF_HUB_DISABLE_TOKEN": "1"})


def test_sbatch_runs_without_exactly_the_secret_holding_variables_here_and_over_ssh():
    """Decided in Python once (holds_secret), here from the values and over ssh from the names
    remote_probe reports of the login environment; the script only names them (env -u), so a
    name bash cannot unset (`my.token`) is dropped too."""
    env = {**{n: v for n, (v, _) in NAMES.items()}, "my.token": "abcd1234", "PLAIN_KEY": "kept"}
    kept = {n for n, v in env.items() if not holds_secret(n, v)} | {"PLAIN_KEY"}
    report = Shell(env=env).ask({"op": "environment", "switches": sorted(SWITCH_VALUES)}, "env")
    here = job_secrets.names_to_unset(env, None, keep={"PLAIN_KEY"})
    there = job_secrets.names_to_unset(None, report["env"], keep={"PLAIN_KEY"})
    assert here == there and "my.token" in here and "PLAIN_KEY" not in here
    script = job_secrets.without(here, ["env"])
    assert "compgen" not in script and not any(v in script for v in env.values() if len(v) > 3)
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    seen = {line.split("=", 1)[0] for line in out.stdout.splitlines()}
    assert seen & set(env) == kept, out.stderr


def test_the_driver_reads_the_0600_file_under_xtrace_without_printing_it_then_removes_it(tmp_path):
    value = "s3cr3t 'quoted' $HOME \"x\"\nline2"
    job_dir = str(tmp_path)
    write = job_secrets.write_file(job_dir, {"WANDB_API_KEY": value})
    subprocess.run(["bash", "-c", "set -e\n" + write], check=True)
    path = Path(job_secrets.secrets_path(job_dir))
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    command = job_secrets.driver_command(
        job_dir,
        ["WANDB_API_KEY"],
        ["python3", "-c", "import os; print(os.environ['WANDB_API_KEY'])"],
    )
    assert value not in command
    # ray.sub runs COMMAND under bash; v0.6.0 with `set -x` around it
    out = subprocess.run(["bash", "-x", "-c", command], capture_output=True, text=True)
    assert out.stdout == value + "\n" and value not in out.stderr and "line2" not in out.stderr
    assert not path.exists()
    again = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
    assert "no secrets file" in again.stderr and "WANDB_API_KEY not set" in again.stderr


@pytest.fixture
def lab(tmp_path, slurm, monkeypatch, capsys):  # noqa: F811
    """The stand-in checkout on the real Slurm; the submitting shell holds secrets and settings."""
    stand_in_checkout(tmp_path / "RL")
    work = tmp_path / "work"
    work.mkdir()
    secrets = {
        "WANDB_API_KEY": "wb-" + os.urandom(12).hex(),
        "HF_TOKEN": "hf_" + os.urandom(12).hex(),
    }
    settings = {n: v for n, (v, s) in NAMES.items() if not s and n != "PATH"}
    # A followed job is asked about each second, as launch_slurm's: each ask is Slurm calls.
    env = clean_env(tmp_path, SLURM_CONF=slurm["SLURM_CONF"], STEPS_POLL_SECONDS="1",
                    STEPS_OUTPUT=str(tmp_path / "out"), **secrets, **settings,
                    **NO_JUDGE)  # fmt: skip

    def cli(*argv: str):
        return steps_cli(monkeypatch, capsys, *argv, cwd=work, env=env)

    return tmp_path, work, cli, secrets, settings


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def test_settings_with_secret_substrings_reach_the_job_and_unlisted_secrets_do_not(lab, slurm):  # noqa: F811
    root, work, cli, secrets, settings = lab
    write_env_toml(work, root, FAKE_EXPECT_SECRETS="WANDB_API_KEY HF_TOKEN")
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab")
    assert res.returncode == 0, res.stderr
    rec = json.loads((root / "record.json").read_text())
    assert set(settings) <= set(rec["env_names"])
    # WANDB_API_KEY is listed in the profile's secrets: the driver has it, value intact.
    assert rec["secrets_present"] == {"WANDB_API_KEY": True, "HF_TOKEN": False}
    assert rec["secrets_sha256"] == {"WANDB_API_KEY": _sha(secrets["WANDB_API_KEY"])}
    job = json.loads(cli("status", "last", "--json").stdout)["job"]
    head = Path(job["job_dir"], f"{job['job_id']}-logs", "ray-head.log").read_text()
    assert "NCCL_IB_PKEY=0x8001" in head and "HF_HUB_DISABLE_TOKEN=1" in head  # the env dump
    for folder in (root, Path(slurm["lab"])):  # the run dir, the logs, Slurm's own job state
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert not any(v.encode() in data for v in secrets.values()), path


def test_the_plain_srun_job_reads_the_secrets_file_and_removes_it(lab):
    root, work, cli, secrets, _ = lab
    # The job's command records a digest of what it got (never the value) in place of `steps`.
    recorder = f"bash -c 'printf %s \\\"$WANDB_API_KEY\\\" | sha256sum > {root}/plain.sha' --"
    write_env_toml(work, root, extra=f'steps_launcher = "{recorder}"\n', container=False)
    res = cli("run", "data_prep/rl_prep", "-c", "tiny", "--run", "lab")
    assert res.returncode == 0, res.stdout + res.stderr
    digest = hashlib.sha256(secrets["WANDB_API_KEY"].encode()).hexdigest()
    assert (root / "plain.sha").read_text().split()[0] == digest
    job = json.loads(cli("status", "last", "--json").stdout)["job"]
    assert not Path(job_secrets.secrets_path(job["job_dir"])).exists()
    assert "secrets_file" not in job
    for path in Path(job["job_dir"]).rglob("*"):  # the batch script, its output, the run dir
        assert not path.is_file() or secrets["WANDB_API_KEY"].encode() not in path.read_bytes()


def test_a_job_cancelled_before_its_driver_ran_leaves_no_secrets_file(lab, slurm):  # noqa: F811
    root, work, cli, _, _ = lab
    write_env_toml(work, root, extra='sbatch_args = ["--begin=now+1hour"]\n')
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab", "--json")
    job = json.loads(res.stdout)["job"]
    secrets_file = Path(job_secrets.secrets_path(job["job_dir"]))
    assert oct(secrets_file.stat().st_mode & 0o777) == "0o600"
    assert cli("cancel", "last").returncode == 0
    assert not secrets_file.exists()
    wait_for(lambda: '"CANCELLED"' in cli("status", "last", "--json").stdout, timeout=60)


def test_setup_command_never_sees_a_secret_and_the_plain_jobs_program_does(lab):
    root, work, cli, secrets, _ = lab
    recorder = f"bash -c 'printf %s \\\"$HF_TOKEN\\\" | sha256sum > {root}/plain.sha' --"
    # setup counts the secret-named variables it holds and tries to read them with xtrace on
    setup = (
        f"env | grep -c -e ^WANDB_API_KEY= -e ^HF_TOKEN= > {root}/setup.count || true; "
        f"set -x; echo ${{HF_TOKEN:-unset}} > {root}/setup.seen; set +x"
    )
    extra = f'steps_launcher = "{recorder}"\nsetup_command = "{setup}"\n'
    write_env_toml(work, root, extra=extra, container=False)
    toml = (
        (work / "env.toml")
        .read_text()
        .replace('secrets = ["WANDB_API_KEY"]', 'secrets = ["WANDB_API_KEY", "HF_TOKEN"]')
    )
    (work / "env.toml").write_text(toml)  # fmt: skip
    res = cli("run", "data_prep/rl_prep", "-c", "tiny", "--run", "lab")
    assert res.returncode == 0, res.stdout + res.stderr
    assert (root / "setup.count").read_text() == "0\n"
    assert (root / "setup.seen").read_text() == "unset\n"
    digest = hashlib.sha256(secrets["HF_TOKEN"].encode()).hexdigest()
    assert (root / "plain.sha").read_text().split()[0] == digest
    job = json.loads(cli("status", "last", "--json").stdout)["job"]
    assert not Path(job_secrets.secrets_path(job["job_dir"])).exists()
    for path in Path(job["job_dir"]).rglob("*"):  # slurm-N.out holds setup's xtrace
        if path.is_file():  # code/ is the copy of steps staged with the job
            assert not any(v.encode() in path.read_bytes() for v in secrets.values()), path
