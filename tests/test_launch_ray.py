"""`run --batch/--run PROFILE` for `executor = "ray"` on a real local Ray head (Jobs API).

NeMo-RL is the stand-in checkout (tests/cluster/driver.py records argv, cwd, config and whether
each expected secret arrived); the Ray head, its dashboard and Ray's Job SDK are real.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cluster_fixtures import (  # noqa: F401
    PYTHON,
    RAY_SECRET,
    ray_head,
    stand_in_checkout,
    wait_for,
)
from run_fixtures import REPO, clean_env, steps_cli

# One worker owns the session's ray (pytest-xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("ray")


DATA = REPO / "steps" / "rl" / "nemo_rl" / "dpo" / "data"


def write_profile(work: Path, root: Path, url: str, remote: bool = True, **env: str) -> None:
    env = {"FAKE_NEMO_RL_RECORD": f"{root}/shared/record.json",
           "FAKE_EXPECT_SECRETS": "WANDB_API_KEY", **env}  # fmt: skip
    plain = ", ".join(f'{k} = "{v}"' for k, v in env.items())
    (work / "env.toml").write_text(
        f"""[ray]
executor = "ray"
address = "{url}"
nemo_rl_dir = "{root}/RL"
launcher = "{PYTHON}"
secrets = ["WANDB_API_KEY"]
entrypoint_num_cpus = 0
{f'remote_dir = "{root}/shared"' if remote else ""}
env = {{ {plain} }}
""",
        encoding="utf-8",
    )


@pytest.fixture
def rlab(tmp_path, ray_head, monkeypatch, capsys):  # noqa: F811
    """Stand-in NeMo-RL, shared storage holding the data, env.toml; `cli(...)` in-process."""
    stand_in_checkout(tmp_path / "RL")
    shared = tmp_path / "shared"
    (shared / "data").mkdir(parents=True)
    for name in ("tiny_train.jsonl", "tiny_val.jsonl"):
        (shared / "data" / name).write_text((DATA / name).read_text())
    work = tmp_path / "work"
    work.mkdir()
    write_profile(work, tmp_path, ray_head)
    # A stray RAY_ADDRESS must not redirect the client: the profile's address wins.
    env = clean_env(tmp_path, STEPS_OUTPUT=str(shared / "out"), RAY_ADDRESS="http://127.0.0.1:9")
    env.pop("WANDB_API_KEY", None)
    inputs = ["--input", f"train={shared}/data/tiny_train.jsonl",
              "--input", f"validation={shared}/data/tiny_val.jsonl"]  # fmt: skip

    def cli(*argv: str):
        return steps_cli(monkeypatch, capsys, *argv, cwd=work, env=env)

    def run(*extra: str):
        return cli("run", "rl/nemo_rl/dpo", "-c", "tiny", *inputs, *extra)

    return tmp_path, work, cli, run


def test_attached_run_streams_logs_and_returns_the_driver_exit_code(rlab, ray_head):  # noqa: F811
    root, work, cli, run = rlab
    ok = run("--run", "ray")
    assert ok.returncode == 0, ok.stderr
    secret_written_nowhere(root, work, cli, ray_head, ok.stdout + ok.stderr)
    assert "driver started: run_dpo.py" in ok.stdout and "driver done" in ok.stdout
    rec = json.loads((root / "shared" / "record.json").read_text())
    job = json.loads(cli("status", "last", "--json").stdout)["job"]
    assert rec["argv"] == ["examples/run_dpo.py", "--config", f"{job['job_dir']}/config.yaml"]
    assert rec["cwd"] == str(root / "RL")
    assert rec["secrets_present"] == {"WANDB_API_KEY": True}  # from the cluster's environment
    assert job["state"] == "SUCCEEDED" and job["address"] == ray_head
    write_profile(work, root, ray_head, FAKE_EXIT="3")
    failed = run("--run", "ray")
    assert failed.returncode == 3, failed.stderr
    assert json.loads(cli("status", "last", "--json").stdout)["job"]["state"] == "FAILED"


def secret_written_nowhere(root: Path, work: Path, cli, url: str, output: str) -> None:
    """The job read WANDB_API_KEY from the cluster; its value is in nothing we wrote or sent."""
    from runners.launch.profiles import RayProfile
    from runners.launch.ray_jobs import RayBackend

    job_id = json.loads(cli("status", "last", "--json").stdout)["job"]["job_id"]
    client = RayBackend("ray", RayProfile(executor="ray", address=url)).client()
    info = client.get_job_info(job_id)
    assert "WANDB_API_KEY" not in json.dumps(info.runtime_env or {})
    assert RAY_SECRET not in info.entrypoint + json.dumps(info.metadata or {})
    searched = 0
    for folder in (work, root / "shared"):
        for path in folder.rglob("*"):
            if path.is_file():
                searched += 1
                assert RAY_SECRET.encode() not in path.read_bytes(), path
    assert searched > 5 and RAY_SECRET not in output


def test_batch_then_status_logs_and_cancel(rlab, ray_head):  # noqa: F811
    root, work, cli, run = rlab
    write_profile(work, root, ray_head, FAKE_TICKS="300", FAKE_TICK_SECONDS="0.2")
    res = run("--batch", "ray")
    assert res.returncode == 0, res.stderr
    job_id = res.stdout.split()[0]
    assert job_id.startswith("steps-dpo-")
    wait_for(lambda: "tick 2" in cli("logs", job_id).stdout, timeout=60)
    assert json.loads(cli("status", job_id, "--json").stdout)["job"]["state"] == "RUNNING"
    assert "stop requested" in cli("cancel", "last").stdout
    wait_for(lambda: '"STOPPED"' in cli("status", job_id, "--json").stdout, timeout=60)
    job = json.loads(cli("status", job_id, "--json").stdout)["job"]
    assert job["exit_code"] not in (None, 0)
    assert any(j["job_id"] == job_id for j in json.loads(cli("jobs", "--json").stdout)["jobs"])


def test_a_secret_missing_on_the_cluster_stops_the_job_naming_it(rlab, ray_head):  # noqa: F811
    _root, work, _cli, run = rlab
    text = (work / "env.toml").read_text().replace('["WANDB_API_KEY"]', '["HF_TOKEN"]')
    (work / "env.toml").write_text(text)
    res = run("--run", "ray")
    assert res.returncode == 2
    assert "secret HF_TOKEN is not set in the Ray cluster environment" in res.stdout


def test_without_remote_dir_the_run_dir_is_uploaded_as_working_dir(rlab, ray_head):  # noqa: F811
    root, work, cli, _run = rlab
    write_profile(work, root, ray_head, remote=False)
    data = root / "RL" / "data"  # inside the cluster's own checkout: visible to the job
    data.mkdir()
    for name in ("tiny_train.jsonl", "tiny_val.jsonl"):
        (data / name).write_text((DATA / name).read_text())
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "ray",
              "--input", f"train={data}/tiny_train.jsonl",
              "--input", f"validation={data}/tiny_val.jsonl",
              f"checkpointing.checkpoint_dir={root}/RL/results",
              f"logger.log_dir={root}/RL/logs")  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    rec = json.loads((root / "shared" / "record.json").read_text())
    assert "/runtime_resources/working_dir_files/" in rec["config_arg"]
    run_dir = next((work / "runs" / "rl" / "nemo_rl" / "dpo").iterdir())
    assert rec["config_text"] == (run_dir / "config.yaml").read_text()


def test_paths_outside_remote_dir_and_an_oversized_upload_are_refused(rlab, ray_head):  # noqa: F811
    root, _work, cli, _run = rlab
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "ray", "--dry-run", "--json")
    found = [f for f in json.loads(res.stdout)["findings"] if f["code"] == "E-REMOTE-PATH"]
    assert res.returncode == 1 and any(str(DATA) in f["message"] for f in found)
    from runners.launch import LaunchRequest
    from runners.launch.profiles import RayProfile
    from runners.launch.ray_jobs import RayBackend

    big = root / "big-run"
    big.mkdir()
    with (big / "blob.bin").open("wb") as fh:
        fh.truncate(101 * 2**20)
    backend = RayBackend("ray", RayProfile(executor="ray", address=ray_head))
    req = LaunchRequest("rl/x", "nemo_rl", big, "$STEPS_RUN_DIR", ["true"], str(root))
    from catalog.errors import StepsError

    with pytest.raises(StepsError) as err:
        backend.submit(req)
    assert err.value.finding.code == "E-REMOTE-PATH" and "100 MiB" in err.value.finding.message
    assert "steps-x-big-run" not in [j.submission_id for j in backend.client().list_jobs()]


def test_gpus_and_version_are_checked_against_the_cluster(rlab, ray_head):  # noqa: F811
    _root, _work, _cli, run = rlab
    res = run("--batch", "ray", "--dry-run", "--json", "cluster.gpus_per_node=4")
    doc = json.loads(res.stdout)
    codes = {f["code"]: f for f in doc["findings"]}
    assert "E-REMOTE-GPUS" in codes and "has 2" in codes["E-REMOTE-GPUS"]["message"]
    assert doc["launch"]["ray_version"] and doc["launch"]["cluster_gpus"] == 2


def test_an_unreachable_address_is_one_clear_error_exit_2(rlab, ray_head):  # noqa: F811
    root, work, _cli, run = rlab
    write_profile(work, root, "http://127.0.0.1:9")
    res = run("--batch", "ray", "--dry-run")
    assert res.returncode == 2
    assert "E-REMOTE-HOST cannot reach the Ray dashboard at http://127.0.0.1:9" in res.stderr
    assert "Traceback" not in res.stderr
    assert os.environ.get("RAY_ADDRESS") == "http://127.0.0.1:9"  # left as the user had it
