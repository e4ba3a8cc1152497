"""`run --batch/--run PROFILE` for `executor = "ray"` on a real local Ray head (Jobs API).

NeMo-RL is the stand-in checkout (tests/cluster/driver.py records argv, cwd, config and whether
each expected secret arrived); the Ray head, its dashboard and Ray's Job SDK are real. A Ray job
takes seconds to start, so the module submits its jobs together first (three --batch jobs, then a
failing attached run while they start) and the tests then check each one. Every command runs in
this process (a `python -m steps` child would pay Ray's import, ~1.2 s of CPU, each time).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cluster_fixtures import (  # noqa: F401
    NO_JUDGE,
    PYTHON,
    RAY_SECRET,
    Relay,
    ray_head,
    stand_in_checkout,
    wait_for,
)
from run_fixtures import REPO, CliResult, clean_env, steps_here

DATA = REPO / "steps" / "rl" / "nemo_rl" / "dpo" / "data"
OOM_LOG = REPO / "tests" / "data" / "failures" / "gpu_oom_in_get_logprobs" / "ray-driver.log"


def profiles(root: Path, url: str) -> str:
    """[ray] and variants that extend it (env tables merge; secrets are appended)."""
    record = f"{root}/shared/record"
    return f"""[ray]
executor = "ray"
address = "{url}"
nemo_rl_dir = "{root}/RL"
launcher = "{PYTHON}"
secrets = ["WANDB_API_KEY"]
entrypoint_num_cpus = 0
remote_dir = "{root}/shared"
env = {{ FAKE_NEMO_RL_RECORD = "{record}-ok.json", FAKE_EXPECT_SECRETS = "WANDB_API_KEY" }}

[fails]
extends = "ray"
env.FAKE_EXIT = "3"
env.FAKE_LOG_FILE = "{OOM_LOG}"
env.FAKE_NEMO_RL_RECORD = "{record}-fails.json"

[ticks]
extends = "ray"
env = {{ FAKE_TICKS = "600", FAKE_TICK_SECONDS = "0.2", FAKE_NEMO_RL_RECORD = "{record}-t.json" }}

[nosecret]
extends = "ray"
secrets = ["HF_TOKEN"]

[upload]
executor = "ray"
address = "{url}"
nemo_rl_dir = "{root}/RL"
launcher = "{PYTHON}"
entrypoint_num_cpus = 0
env = {{ FAKE_NEMO_RL_RECORD = "{record}-upload.json" }}

[unreachable]
extends = "ray"
address = "http://127.0.0.1:9"

[notmounted]
extends = "ray"
remote_dir = "{root}/not-mounted/steps-runs"
shared_dirs = ["{root}/shared"]

[pvc]
extends = "ray"
remote_dir = "{root}/shared/steps-runs"
shared_dirs = ["{root}/shared"]
"""


@dataclass
class Lab:
    root: Path
    work: Path
    env: dict[str, str]
    inputs: list[str]
    jobs: dict[str, str] = field(default_factory=dict)  # profile -> job id
    attached_fail: CliResult | None = None

    def cli(self, *argv: str) -> tuple[int, str, str]:
        """`python -m steps ...` in this process, with the lab's cwd and environment."""
        res = steps_here(*argv, cwd=self.work, env=self.env)
        return res.returncode, res.stdout, res.stderr

    def run_argv(self, *extra: str) -> list[str]:
        return ["run", "rl/nemo_rl/dpo", "-c", "tiny", *self.inputs, *extra]

    def run(self, *extra: str) -> tuple[int, str, str]:
        return self.cli(*self.run_argv(*extra))

    def status(self, job_id: str) -> dict:
        return json.loads(self.cli("status", job_id, "--json")[1])["job"]

    def record(self, name: str) -> dict:
        return json.loads((self.root / "shared" / f"record-{name}.json").read_text())


@pytest.fixture(scope="module")
def lab(tmp_path_factory, ray_head):  # noqa: F811
    root = tmp_path_factory.mktemp("raylab")
    stand_in_checkout(root / "RL")
    shared = root / "shared"
    (shared / "data").mkdir(parents=True)
    upload_data = root / "RL" / "data"  # inside the cluster's own checkout: the job sees it
    upload_data.mkdir()
    for name in ("tiny_train.jsonl", "tiny_val.jsonl"):
        (shared / "data" / name).write_text((DATA / name).read_text())
        (upload_data / name).write_text((DATA / name).read_text())
    work = root / "work"
    work.mkdir()
    (work / "env.toml").write_text(profiles(root, ray_head), encoding="utf-8")
    # A stray RAY_ADDRESS must not redirect the client: the profile's address wins.
    env = clean_env(
        root, STEPS_OUTPUT=str(shared / "out"), RAY_ADDRESS="http://127.0.0.1:9", **NO_JUDGE
    )
    env.pop("WANDB_API_KEY", None)
    inputs = ["--input", f"train={shared}/data/tiny_train.jsonl",
              "--input", f"validation={shared}/data/tiny_val.jsonl"]  # fmt: skip
    lab = Lab(root, work, env, inputs)
    for name in ("ticks", "nosecret"):
        code, out, err = lab.run("--batch", name)
        assert code == 0, err
        lab.jobs[name] = out.split()[0]
    code, out, err = lab.cli(
        "run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "upload",
        "--input", f"train={upload_data}/tiny_train.jsonl",
        "--input", f"validation={upload_data}/tiny_val.jsonl",
        f"checkpointing.checkpoint_dir={root}/RL/results", f"logger.log_dir={root}/RL/logs",
    )  # fmt: skip
    assert code == 0, out + err
    lab.jobs["upload"] = out.split()[0]
    lab.attached_fail = steps_here(*lab.run_argv("--run", "fails"), cwd=work, env=env)
    yield lab
    for job_id in lab.jobs.values():
        lab.cli("cancel", job_id)


def ended(lab: Lab, job_id: str) -> dict:
    wait_for(lambda: lab.status(job_id)["exit_code"] is not None, timeout=90)
    return lab.status(job_id)


def test_attached_run_streams_logs_and_returns_the_driver_exit_code(lab):
    code, out, err = lab.run("--run", "ray")
    assert code == 0, err
    assert "driver started: run_dpo.py" in out and "driver done" in out
    jobs = json.loads(lab.cli("jobs", "--json")[1])["jobs"]
    job = next(j for j in jobs if j["profile"] == "ray")
    rec = lab.record("ok")
    assert rec["argv"] == ["examples/run_dpo.py", "--config", f"{job['job_dir']}/config.yaml"]
    assert rec["cwd"] == str(lab.root / "RL")
    assert rec["secrets_present"] == {"WANDB_API_KEY": True}  # from the cluster's environment
    assert job["state"] == "SUCCEEDED" and job["exit_code"] == 0
    failed = lab.attached_fail
    assert failed is not None and failed.returncode == 3, failed.stderr
    assert "driver done" in failed.stdout and "ended: FAILED (exit code 3)" in failed.stderr


def test_diagnose_reads_a_ray_jobs_driver_log_from_the_dashboard(lab):
    """The attached run that failed (test above) printed a GPU OOM in its driver log."""
    jobs = json.loads(lab.cli("jobs", "--json")[1])["jobs"]
    job = next(j for j in jobs if j["profile"] == "fails")
    _, out, err = lab.cli("diagnose", job["job_id"], "--json")
    doc = json.loads(out)
    assert doc["kind"] == "gpu_oom" and doc["state"] == "FAILED", err
    assert doc["method"] == "DTensorPolicyWorkerV2.get_logprobs"
    assert doc["evidence"][0]["path"] == "driver log (Ray dashboard)"


def test_a_secret_is_read_from_the_cluster_and_written_nowhere(lab, ray_head):  # noqa: F811
    from runners.launch.profiles.env_toml import RayProfile
    from runners.launch.ray.backend import RayBackend

    client = RayBackend("ray", RayProfile(executor="ray", address=ray_head)).client()
    for job in client.list_jobs():
        assert "WANDB_API_KEY" not in json.dumps(job.runtime_env or {})
        assert RAY_SECRET not in (job.entrypoint or "") + json.dumps(job.metadata or {})
    searched = 0
    for folder in (lab.work, lab.root / "shared"):
        for path in folder.rglob("*"):
            if path.is_file():
                searched += 1
                assert RAY_SECRET.encode() not in path.read_bytes(), path
    assert searched > 10


def test_batch_then_status_logs_and_cancel(lab):
    job_id = lab.jobs["ticks"]
    assert job_id.startswith("steps-dpo-")
    wait_for(lambda: "tick 2" in lab.cli("logs", job_id)[1], timeout=90)
    assert lab.status(job_id)["state"] == "RUNNING"
    assert any(j["job_id"] == job_id for j in json.loads(lab.cli("jobs", "--json")[1])["jobs"])
    code, out, _ = lab.cli("cancel", job_id)
    assert code == 0 and "stop requested" in out
    job = ended(lab, job_id)
    assert job["state"] == "STOPPED" and job["exit_code"] != 0


def test_a_secret_missing_on_the_cluster_stops_the_job_naming_it(lab):
    job = ended(lab, lab.jobs["nosecret"])
    assert job["state"] == "FAILED" and job["exit_code"] == 2
    log = lab.cli("logs", lab.jobs["nosecret"])[1]
    assert "secret HF_TOKEN is not set in the Ray cluster environment" in log


def test_without_remote_dir_the_run_dir_is_uploaded_as_working_dir(lab):
    job = ended(lab, lab.jobs["upload"])
    assert job["state"] == "SUCCEEDED", lab.cli("logs", lab.jobs["upload"])[1]
    rec = lab.record("upload")
    assert "/runtime_resources/working_dir_files/" in rec["config_arg"]
    run_dir = next(
        p for p in (lab.work / "runs" / "rl" / "nemo_rl" / "dpo").iterdir()
        if json.loads((p / "run.json").read_text()).get("job", {}).get("job_id") == job["job_id"]
    )  # fmt: skip
    assert rec["config_text"] == (run_dir / "config.yaml").read_text()


def test_paths_outside_remote_dir_and_an_oversized_upload_are_refused(lab, ray_head):  # noqa: F811
    code, out, _ = lab.cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "ray", "--dry-run",
                           "--json")  # fmt: skip
    found = [f for f in json.loads(out)["findings"] if f["code"] == "E-REMOTE-PATH"]
    assert code == 1 and any(str(DATA) in f["message"] for f in found)
    from catalog.errors import StepsError
    from runners.launch.profiles.env_toml import RayProfile
    from runners.launch.ray.backend import RayBackend
    from runners.launch.request import LaunchRequest

    big = lab.root / "big-run"
    big.mkdir()
    with (big / "blob.bin").open("wb") as fh:
        fh.truncate(101 * 2**20)
    backend = RayBackend("ray", RayProfile(executor="ray", address=ray_head))
    req = LaunchRequest("rl/x", "nemo_rl", big, "$STEPS_RUN_DIR", ["true"], str(lab.root))
    with pytest.raises(StepsError) as err:
        backend.submit(req, backend.job_record(req))
    assert err.value.finding.code == "E-REMOTE-PATH" and "100 MiB" in err.value.finding.message
    assert "steps-x-big-run" not in [j.submission_id for j in backend.client().list_jobs()]


def test_gpus_and_version_are_checked_against_the_cluster(lab):
    code, out, _ = lab.run("--batch", "ray", "--dry-run", "--json", "cluster.gpus_per_node=4")
    doc = json.loads(out)
    codes = {f["code"]: f for f in doc["findings"]}
    assert code == 1 and "has 2" in codes["E-REMOTE-GPUS"]["message"]
    assert doc["launch"]["ray_version"] and doc["launch"]["cluster_gpus"] == 2


def test_an_unreachable_address_is_one_clear_error_exit_2(lab):
    code, out, err = lab.run("--batch", "unreachable", "--dry-run")
    assert code == 2  # one finding among the run's others (test_unreachable_host.py)
    assert "E-REMOTE-HOST cannot reach the Ray dashboard at http://127.0.0.1:9" in out + err
    assert "Traceback" not in err


def test_a_submission_whose_answer_is_lost_is_found_by_its_id(lab, ray_head):  # noqa: F811
    """The dashboard queues the job but its answer never arrives: the submission id is ours, so
    the job is found and recorded (no second submission, no thread left waiting)."""
    from runners.launch.profiles.env_toml import RayProfile
    from runners.launch.ray.backend import RayBackend

    with Relay(ray_head, drop_answers_to=b"POST /api/jobs/") as relay:
        env_file = lab.work / "lost.toml"
        text = profiles(lab.root, relay.url).replace("record-ok.json", "record-lost.json")
        env_file.write_text(text, encoding="utf-8")
        lost = Lab(lab.root, lab.work, {**lab.env, "STEPS_SUBMIT_SECONDS": "2"}, lab.inputs)
        start = time.monotonic()
        code, out, err = lost.run("--batch", "ray", "--env-file", str(env_file))
        assert code == 0, err
        assert time.monotonic() - start < 30
    assert "did not answer the submission" in err and "but Ray holds the job under its id" in err
    sid = out.split()[0]
    client = RayBackend("ray", RayProfile(executor="ray", address=ray_head)).client()
    wait_for(lambda: str(client.get_job_status(sid)) in ("SUCCEEDED", "JobStatus.SUCCEEDED"))
    assert [j.submission_id for j in client.list_jobs()].count(sid) == 1
    record = next(
        json.loads(p.read_text())["job"] for p in (lab.work / "runs").rglob("run.json")
        if json.loads(p.read_text()).get("job", {}).get("job_id") == sid
    )  # fmt: skip
    assert record["state"] == "PENDING" and record["address"] == relay.url


def test_a_dashboard_lost_while_following_is_lost_contact_exit_2(lab, ray_head):  # noqa: F811
    from runners.launch.profiles.env_toml import RayProfile
    from runners.launch.ray.backend import RayBackend

    # The link goes once the job's log has shown `tick 1` on its way to `logs -f`.
    with Relay(ray_head, cut_after=b"tick 1\n") as relay:
        env_file = lab.work / "cut.toml"
        env_file.write_text(profiles(lab.root, relay.url), encoding="utf-8")
        code, out, err = lab.run("--batch", "ticks", "--env-file", str(env_file))
        assert code == 0, err
        sid = out.split()[0]
        code, out, err = lab.cli("logs", sid, "-f")
    RayBackend("ray", RayProfile(executor="ray", address=ray_head)).client().stop_job(sid)
    assert code == 2 and "tick 1" in out, err
    assert (
        f"E-REMOTE-LOST lost contact with the Ray dashboard at {relay.url}, the job may still "
        "run; re-attach with `python -m steps logs" in err
    )
    assert "ended:" not in err and "Traceback" not in err


def test_a_cluster_ray_other_than_the_checkouts_pin_is_a_warning(lab, ray_head):  # noqa: F811
    import urllib.request

    running = json.loads(urllib.request.urlopen(f"{ray_head}/api/version").read())["ray_version"]
    lock = lab.root / "RL" / "uv.lock"
    try:
        for pinned, warned in (("2.0.0", True), (running, False)):
            lock.write_text(f'version = 1\n\n[[package]]\nname = "ray"\nversion = "{pinned}"\n')
            code, out, _ = lab.run("--batch", "ray", "--dry-run", "--json")
            found = {f["code"]: f for f in json.loads(out)["findings"]}
            assert code == 0 and ("W-RAY-VERSION" in found) == warned, found
            if warned:
                message = found["W-RAY-VERSION"]["message"]
                assert (
                    message
                    == f"the cluster runs Ray {running} but the NeMo-RL checkout pins ray 2.0.0"
                )
    finally:
        lock.unlink()


def both_ways(lab: Lab, url: str, code: str, *argv: str) -> dict:
    """`run ... --dry-run` and `run ...` report the same `code` finding; the submit wrote no
    run dir here and submitted no job. The finding."""
    from runners.launch.profiles.env_toml import RayProfile
    from runners.launch.ray.backend import RayBackend

    client = RayBackend("ray", RayProfile(executor="ray", address=url)).client()

    def ours() -> set[str]:  # the head is shared: other files' tests submit to it meanwhile
        here = f"{lab.root}/"  # each job's entrypoint starts with `cd` into its lab's checkout
        return {j.submission_id for j in client.list_jobs() if here in (j.entrypoint or "")}

    jobs = ours()
    runs = set((lab.work / "runs").rglob("run.json"))
    found = []
    for extra in (["--dry-run"], []):
        exit_code, out, err = lab.run(*argv, *extra, "--json")
        assert exit_code == 1, err
        found.append({f["code"]: f for f in json.loads(out)["findings"]}[code])
    assert found[0] == found[1]
    assert set((lab.work / "runs").rglob("run.json")) == runs
    assert ours() == jobs
    return found[0]


def test_a_literal_secret_in_the_config_is_refused_by_the_dry_run_as_by_the_submit(
    lab,
    ray_head,  # noqa: F811
):
    finding = both_ways(
        lab,
        ray_head,
        "E-REMOTE-SECRET-INLINE",
        "--batch",
        "ray",
        "++logger.password=literal-0123456789",
    )
    assert "a Ray job cannot receive secret values from here" in finding["message"]
    assert "literal-0123456789" not in json.dumps(finding)


def test_a_remote_dir_not_mounted_here_is_refused_before_anything_is_copied(
    lab,
    ray_head,  # noqa: F811
):
    finding = both_ways(lab, ray_head, "E-REMOTE-STAGE", "--batch", "notmounted")
    assert (
        f"{lab.root}/not-mounted/steps-runs is not a folder on this machine" in (finding["message"])
    )
    assert finding["line"] and finding["path"] == str(lab.work / "env.toml")
    assert not (lab.root / "not-mounted").exists()


def test_paths_under_shared_dirs_are_seen_by_the_cluster(lab):
    # remote_dir need not exist yet when the shared folder that holds it is mounted here
    code, out, err = lab.run("--batch", "pvc", "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["launch"]["job_dir"].startswith(f"{lab.root}/shared/steps-runs/")
    code, out, _ = lab.cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "pvc", "--dry-run",
                           "--json")  # fmt: skip
    outside = next(f for f in json.loads(out)["findings"] if f["code"] == "E-REMOTE-PATH")
    shared = f"{lab.root}/shared/steps-runs or {lab.root}/shared"
    assert code == 1 and f"is not under {shared}: the Ray cluster" in outside["message"]
    assert outside["key"] == "shared_dirs"
