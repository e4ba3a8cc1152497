"""What ray.sub will ask of the real one-node Slurm, known before submitting (dry runs + one job).

ray.sub's header holds `--account=ACCOUNT --partition=PARTITION` placeholders, and its srun steps
ask `--cpus-per-task=$CPUS_PER_WORKER`: the probe reads the cluster's defaults and the partition's
CPUs (`scontrol`, `sacctmgr`, `sinfo`) from the real lab; the CPU rule reads NeMo-RL's real
ray.sub files (the session's fixtures, skipped when absent).
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cluster_fixtures import NO_JUDGE, PYTHON, slurm, stand_in_checkout  # noqa: F401
from run_fixtures import REPO, clean_env, steps_cli

FIXTURES = Path(
    os.environ.get("STEPS_RAY_SUB_FIXTURES", REPO.parent / "shared" / "fixtures" / "nemo-rl")
)
PROFILE = """[lab]
executor = "slurm"
time = "00:05:00"
container_image = "img"
mounts = ["{root}:{root}", "{repo}:{repo}"]
remote_dir = "{root}/shared"
nemo_rl_dir = "{root}/RL"
launcher = "{python}"
"""


@pytest.fixture
def lab(tmp_path, slurm, monkeypatch, capsys):  # noqa: F811
    """`run(profile_extra, ray_sub=None, *args)`: a NeMo-RL step against the lab, a dry run
    unless args say otherwise; returns (exit code, findings by code, the JSON document)."""
    stand_in_checkout(tmp_path / "RL")
    work = tmp_path / "work"
    work.mkdir()
    env = clean_env(
        tmp_path, SLURM_CONF=slurm["SLURM_CONF"], STEPS_OUTPUT=str(tmp_path / "out"), **NO_JUDGE
    )
    env["STEPS_POLL_SECONDS"] = "1"  # a followed job is asked about each second (Slurm calls)

    def run(extra: str = "", ray_sub: str | None = None, *args: str):
        if ray_sub is not None:
            if not (FIXTURES / ray_sub).is_file():
                pytest.skip(f"NeMo-RL's real {ray_sub} is not in {FIXTURES}")
            shutil.copy(FIXTURES / ray_sub, tmp_path / "RL" / "ray.sub")
        text = PROFILE.format(root=tmp_path, repo=REPO, python=PYTHON) + extra
        (work / "env.toml").write_text(text, encoding="utf-8")
        argv = args or ("--batch", "lab", "--dry-run")
        res = steps_cli(monkeypatch, capsys, "run", "rl/nemo_rl/dpo", "-c", "tiny", *argv,
                        "--json", cwd=work, env=env)  # fmt: skip
        doc = json.loads(res.stdout)
        return res.returncode, {f["code"]: f for f in doc["findings"]}, doc

    return run


def _scontrol(conf: str, *args: str) -> str:
    env = {**os.environ, "SLURM_CONF": conf}
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, env=env).stdout


def test_without_a_partition_the_clusters_default_replaces_ray_subs_placeholder(lab, slurm):  # noqa: F811
    code, findings, doc = lab()
    assert code == 0, findings
    assert "--partition=debug" in doc["launch"]["sbatch"]
    # sbatch would refuse ray.sub's literal PARTITION; the job runs on the default partition.
    code, _, doc = lab("", None, "--run", "lab")
    assert code == 0 and doc["job"]["state"] == "COMPLETED"


def test_without_a_default_partition_the_placeholder_is_a_finding_before_submit(lab, slurm):  # noqa: F811
    conf = slurm["SLURM_CONF"]
    _scontrol(conf, "update", "PartitionName=debug", "Default=NO")
    try:
        code, findings, _ = lab()
    finally:
        _scontrol(conf, "update", "PartitionName=debug", "Default=YES")
    assert code == 1 and "E-REMOTE-PARTITION" in findings
    assert findings["E-REMOTE-PARTITION"]["path"].endswith("env.toml")
    assert 'partition = "NAME"' in findings["E-REMOTE-PARTITION"]["fix"]
    code, findings, doc = lab('partition = "debug"\n')
    assert code == 0 and "--partition=debug" in doc["launch"]["sbatch"]


def test_the_account_is_the_profiles_else_the_default_else_left_to_a_cluster_without_accounting(
    lab,
    slurm,  # noqa: F811
):
    config = _scontrol(slurm["SLURM_CONF"], "show", "config")
    _, findings, doc = lab()
    accounts = [a for a in doc["launch"]["sbatch"] if a.startswith("--account=")]
    if "accounting_storage/none" in config:
        assert accounts == [] and "E-REMOTE-ACCOUNT" not in findings  # ACCOUNT is harmless here
    else:  # slurmdbd answers: the user's default account, read as the probe reads it
        default = subprocess.run(
            ["sacctmgr", "-nP", "show", "user", getpass.getuser(),
             "format=DefaultAccount"],
            capture_output=True, text=True, env={**os.environ, "SLURM_CONF": slurm["SLURM_CONF"]},
        ).stdout.split()  # fmt: skip
        assert accounts == [f"--account={default[0]}"] and "E-REMOTE-ACCOUNT" not in findings
    _, _, doc = lab('account = "proj"\n')
    assert "--account=proj" in doc["launch"]["sbatch"]


def test_a_user_without_a_default_account_is_a_finding_before_submit(lab, slurm):  # noqa: F811
    if not slurm["accounting"]:
        pytest.skip("the lab runs without slurmdbd (apt-get install slurmdbd mariadb-server)")
    env = {**os.environ, "SLURM_CONF": slurm["SLURM_CONF"]}
    user = getpass.getuser()
    sacctmgr = ["sacctmgr", "-i"]
    subprocess.run([*sacctmgr, "delete", "user", f"name={user}"], env=env, capture_output=True)
    try:  # slurmdbd answers, but knows no account of this user: ray.sub's ACCOUNT would go
        code, findings, _ = lab()
    finally:
        subprocess.run(
            [*sacctmgr, "add", "user", user, f"account={user}", "adminlevel=Administrator"],
            env=env, capture_output=True, check=True,
        )  # fmt: skip
    assert code == 1 and "E-REMOTE-ACCOUNT" in findings, findings
    assert findings["E-REMOTE-ACCOUNT"]["path"].endswith("env.toml")
    assert 'account = "NAME"' in findings["E-REMOTE-ACCOUNT"]["fix"]
    code, findings, doc = lab('account = "proj"\n')
    assert "E-REMOTE-ACCOUNT" not in findings and "--account=proj" in doc["launch"]["sbatch"]


def _lab_cpus(conf: str) -> int:
    out = subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True,
                         env={**os.environ, "SLURM_CONF": conf}).stdout  # fmt: skip
    return int(out.split()[0].rstrip("+"))


@pytest.mark.parametrize(
    ("ray_sub", "cpus_per_worker", "expected"),
    [
        ("ray.sub.v0.6.0", None, True),  # 16 x GPUS_PER_NODE by default
        ("ray.sub.v0.6.0", "node", False),  # CPUS_PER_WORKER = the node's CPUs: the fix
        ("ray.sub.v0.7.0", None, False),  # the node's own CPUTot by default
        ("ray.sub.pin-7ea279ab", "more", True),  # an explicit value the node cannot give
    ],
)
def test_ray_subs_cpus_per_task_must_fit_the_partitions_nodes(
    lab,
    slurm,  # noqa: F811
    ray_sub,
    cpus_per_worker,
    expected,
):
    cpus = _lab_cpus(slurm["SLURM_CONF"])
    env = {"GPUS_PER_NODE": str(cpus // 16 + 1)}  # 16 x GPUS_PER_NODE > the lab's CPUs
    if cpus_per_worker:
        env["CPUS_PER_WORKER"] = str(cpus if cpus_per_worker == "node" else cpus + 1)
    plain = ", ".join(f'{k} = "{v}"' for k, v in env.items())
    code, findings, _ = lab(f"env = {{ {plain} }}\n", ray_sub)
    assert ("E-REMOTE-CPUS" in findings) is expected, findings
    if expected:
        finding = findings["E-REMOTE-CPUS"]
        assert f'CPUS_PER_WORKER = "{cpus}"' in finding["fix"] and code == 1
        assert "More processors requested than permitted" in finding["message"]
        assert finding["path"].endswith("env.toml") and finding["line"]
