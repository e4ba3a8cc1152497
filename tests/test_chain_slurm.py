"""`run --batch PROFILE --until-done` on a real one-node Slurm: chains that train to the end.

Everything is real except NeMo-RL: slurmctld/slurmd, sbatch dependencies, scancel, `scontrol
requeue`, bash, the segment script and the decision program staged with the run dir, run inside
the jobs by a `python3` that has nothing of ours and no pydantic (the profile names no
`steps_launcher`: nothing of ours is installed where the jobs run). The stand-in NeMo-RL
(tests/cluster/driver.py) trains fake steps as NeMo-RL does (tmp_step_N -> step_N with
training_info.json, checkpoint_must_save_by, SIGTERM saves nothing, resume from the latest
step_N, failure on request) and appends every trained step to a ledger.

The chains start together when the module's fixture submits them and run side by side in the
lab; each test then waits for its own chain. One chain is submitted by a `python -m steps run
--batch` child that has exited before its first segment trains (nothing of ours stays behind);
the others, and the CLI calls the tests make, run `steps.cli.main` in this process (a child's
interpreter start and imports cost ~1 s of CPU each, and what they check is not the process).
A segment's time limit is its checkpoint_must_save_by deadline: the profile's `time` of one
minute minus a `save_margin` of 58 s, so a segment trains for 2 s.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from cluster_fixtures import NO_JUDGE, PYTHON, bare_python_bin, slurm, stand_in_checkout, wait_for  # noqa: F401
from run_fixtures import REPO, CliResult, clean_env, steps_here

from runners.launch import job_code

pytestmark = pytest.mark.slow
DPO = "rl/nemo_rl/dpo"
END_MARK = "@@steps-segment-end"  # the segment script's last line
KEY = "wandb0123456789abcdef0123456789abcdef0123"
SLOW_DEADLINE = "checkpointing.checkpoint_must_save_by=00:00:00:30"  # set by the user: kept
# Failure signatures as NeMo-RL's driver log shows them (tests/data corpus of public reports).
NCCL_TIMEOUT = (
    "[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=12, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out."
)
HUB_DOWN = (
    "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it "
    "in the cached files and it looks like Qwen/Qwen3-0.6B is not the path to a directory."
)
GPU_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.11 GiB of which 1.06 GiB is free."
)
HELD = {"FAKE_STEP_SECONDS": "0.1", "FAKE_WAIT_AT_STEP": "3"}  # + FAKE_WAIT_FOR=<root>/go
SCENARIOS: dict[str, tuple[dict[str, str], list[str]]] = {
    # name: (the stand-in's knobs in the profile's env, overrides)
    "three_segments": (
        {"FAKE_STEP_SECONDS": "0.4", "FAKE_EXPECT_SECRETS": "WANDB_API_KEY"},
        ["dpo.max_num_steps=9"],
    ),
    # These three hold before step 3 (2 for cancel) until the test has interrupted them.
    "preempted": (HELD, ["dpo.max_num_steps=8", "checkpointing.save_period=1", SLOW_DEADLINE]),
    "requeued": (HELD, ["dpo.max_num_steps=8", "checkpointing.save_period=1", SLOW_DEADLINE]),
    "deterministic": (
        {
            "FAKE_STEP_SECONDS": "0.1",
            "FAKE_FAIL_AT_STEP": "3",
            "FAKE_FAIL_LOG": NCCL_TIMEOUT,
        },
        ["dpo.max_num_steps=6", "checkpointing.save_period=1", SLOW_DEADLINE],
    ),
    "transient": (
        {"FAKE_STEP_SECONDS": "0.1", "FAKE_FAIL_AT_STEP": "2", "FAKE_FAIL_LOG": HUB_DOWN},
        ["dpo.max_num_steps=4", "checkpointing.save_period=1", SLOW_DEADLINE],
    ),
    "gpu_oom": (
        {"FAKE_STEP_SECONDS": "0.1", "FAKE_FAIL_AT_STEP": "2", "FAKE_FAIL_LOG": GPU_OOM},
        ["dpo.max_num_steps=4", "checkpointing.save_period=1", SLOW_DEADLINE],
    ),
    "cancelled": ({**HELD, "FAKE_WAIT_AT_STEP": "2"}, ["dpo.max_num_steps=5", SLOW_DEADLINE]),
}


def write_profile(root: Path, knobs: dict[str, str], gpu: bool) -> None:
    env = {**knobs, "FAKE_LEDGER": f"{root}/ledger", "FAKE_WAIT_FOR": f"{root}/go"}
    env["FAKE_NEMO_RL_RECORD"] = f"{root}/record.json"
    if knobs.get("FAKE_FAIL_LOG") == HUB_DOWN:  # the hub is back for the next segment
        env["FAKE_FAIL_ONCE"] = f"{root}/failed-once"
    table = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
    (root / "work" / "env.toml").write_text(
        f"""[lab]
executor = "slurm"
partition = "debug"
time = "00:01:00"
save_margin = "00:00:58"
container_image = "nvcr.io/nvidia/nemo-rl:v0.7.0"
mounts = ["{root}:{root}", "{REPO}:{REPO}"]
remote_dir = "{root}/shared"
nemo_rl_dir = "{root}/RL"
launcher = "{PYTHON}"
sbatch_args = ["--oversubscribe"]
{"gpus_per_node = 1" if gpu else ""}
secrets = ["WANDB_API_KEY"]
env = {{ {table} }}
""",
        encoding="utf-8",
    )


def lab_env(root: Path, slurm: dict, **extra: str) -> dict[str, str]:  # noqa: F811
    """The submitting environment, which the jobs inherit: the lab's Slurm, a bare `python3`
    first on PATH, no PYTHONPATH (this test's Python has steps installed: it submits)."""
    env = clean_env(root, SLURM_CONF=slurm["SLURM_CONF"], **NO_JUDGE, **extra)
    env["PATH"] = f"{bare_python_bin(root / 'bare-bin')}:{env['PATH']}"
    env.pop("PYTHONPATH", None)
    return env


class Chain:
    """One submitted chain: its folders, environment and what its job dir records."""

    def __init__(self, root: Path, env: dict[str, str], submitted: CliResult):
        self.root, self.env, self.submitted = root, env, submitted
        self.work = root / "work"
        self.run_dir = next((self.work / "runs" / DPO).iterdir())
        self.job_dir = root / "shared" / DPO / self.run_dir.name
        self.ckpt = root / "out" / "dpo" / "checkpoints"

    def record(self) -> dict:
        for _ in range(20):  # a segment may be replacing the file this instant
            try:
                return json.loads((self.job_dir / "run.json").read_text())["chain"]
            except (OSError, ValueError):
                time.sleep(0.05)
        raise AssertionError(f"unreadable {self.job_dir / 'run.json'}")

    def ended(self, timeout: float = 60) -> dict:
        end = time.monotonic() + timeout
        while self.record()["state"] not in ("done", "stopped", "cancelled"):
            if time.monotonic() > end:
                logs = "".join(  # the jobs' own words: why a segment ended as it did
                    f"\n--- {log.name} (tail) ---\n" + log.read_text(errors="replace")[-3000:]
                    for log in sorted(self.job_dir.glob("slurm-*.out"))
                )
                pytest.fail(f"the chain did not end within {timeout} s: {self.record()}{logs}")
            time.sleep(0.3)
        return self.record()

    def ledger(self) -> list[int]:
        path = self.root / "ledger"
        return [int(x) for x in path.read_text().split()] if path.exists() else []

    def steps(self, *argv: str) -> CliResult:
        """`python -m steps ARGV` from the chain's work dir, in this process."""
        return steps_here(*argv, cwd=self.work, env=self.env)

    def running_segment(self) -> dict:
        def live() -> dict | None:
            segs = self.record()["segments"]
            return segs[-1] if segs and segs[-1]["ended_utc"] is None else None

        return wait_for(live, timeout=60, step=0.1)

    def queue(self, states: str = "PD,R,CG") -> list[str]:
        """The chain's Slurm jobs (its job name) in these states: `JOBID STATE` each."""
        out = subprocess.run(
            ["squeue", "-h", "-n", self.record()["job_name"], "-t", states, "-o", "%i %T"],
            env=self.env, capture_output=True, text=True,
        )  # fmt: skip
        return out.stdout.split()[::2]


def release(chain: Chain, job_id: str) -> bool:
    """`scontrol update StartTime=now` a requeued job until it runs again (True then), once its
    first run is gone (a relaunch while slurmd still ends it fails at once)."""
    line = job_line(chain, job_id)
    out = (chain.job_dir / f"slurm-{job_id}.out").read_text()
    if "Restarts=0 " in line or "JobState=COMPLETING" in line or END_MARK not in out:
        return False  # the requeue is not through yet
    if "JobState=PENDING" in line:
        update = ["scontrol", "update", f"jobid={job_id}", "StartTime=now"]
        subprocess.run(update, env=chain.env, capture_output=True)
        return False
    return True


def job_line(chain: Chain, job_id: str) -> str:
    show = ["scontrol", "show", "job", job_id, "-o"]
    return subprocess.run(show, env=chain.env, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def chains(tmp_path_factory, slurm):  # noqa: F811
    """Every scenario's chain, submitted together: three_segments from a `python -m steps run
    --batch` child that has exited (test_the_chain_finishes_after_the_submitting_process_is_gone),
    the others from `run --batch` in this process while that child submits."""
    base = tmp_path_factory.mktemp("chains")
    made = {}
    for name, (knobs, _overrides) in SCENARIOS.items():
        root = base / name
        stand_in_checkout(root / "RL")
        (root / "work").mkdir()
        write_profile(root, knobs, gpu=name == "preempted")  # the lab's one GPU: preemptible
        made[name] = (root, lab_env(root, slurm, STEPS_OUTPUT=str(root / "out"), WANDB_API_KEY=KEY))

    def argv(name: str) -> list[str]:
        overrides = SCENARIOS[name][1]
        return ["run", DPO, "-c", "tiny", "--batch", "lab", "--until-done", "--max-segments", "6",
                *overrides]  # fmt: skip

    root, env = made["three_segments"]
    child = subprocess.Popen(
        [PYTHON, "-m", "steps", *argv("three_segments")], cwd=root / "work", env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out = {}
    for name, (root, env) in made.items():
        if name != "three_segments":
            res = steps_here(*argv(name), cwd=root / "work", env=env)
            assert res.returncode == 0, f"{name}: {res.stderr}"
            out[name] = Chain(root, env, res)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 0, f"three_segments: {stderr}"
    root, env = made["three_segments"]
    out["three_segments"] = Chain(root, env, CliResult(child.returncode, stdout, stderr))
    yield out
    for chain in out.values():  # nothing of these chains outlives the module
        name = chain.record()["job_name"]
        subprocess.run(["scancel", f"--name={name}"], env=chain.env, capture_output=True)


def test_a_chain_trains_to_the_end_across_segments_without_training_a_step_twice(chains):
    chain = chains["three_segments"]
    record = chain.ended()
    assert record["state"] == "done", record
    segs = record["segments"]
    assert len(segs) >= 3
    assert chain.ledger() == list(range(1, 10))  # every step once, in order
    assert [s["steps_before"] for s in segs[1:]] == [s["steps_after"] for s in segs[:-1]]
    assert segs[-1]["steps_after"] == 9 and segs[0]["steps_before"] == 0
    assert all(s["state"] == "COMPLETED" and s["exit_code"] == 0 for s in segs)
    # Every segment ended at its own deadline with a save: checkpoint_must_save_by was set
    # from the profile's time (1 min) minus save_margin (58 s).
    assert record["must_save_by"] == "00:00:00:02" and record["must_save_by_from"] == "chain"
    config = (chain.job_dir / "config.yaml").read_text()
    assert "checkpoint_must_save_by: 00:00:00:02" in config
    log = (chain.job_dir / f"{segs[0]['job_id']}-logs" / "ray-driver.log").read_text()
    assert "Timeout has been reached, stopping training early" in log
    assert sorted(p.name for p in chain.ckpt.iterdir())[-1] == "step_9"
    # The last segment's driver had the secret too (each driver reads and removes the run's
    # secrets file; the chain keeps a 0600 copy until it ends, then removes it).
    assert json.loads((chain.root / "record.json").read_text())["secrets_present"] == {
        "WANDB_API_KEY": True
    }
    assert not list(chain.job_dir.glob(".steps-*secrets*"))
    # Nothing is left queued once training reached its end.
    assert record["next_job_id"] is None
    wait_for(lambda: chain.queue() == [], timeout=10, step=0.1)


def test_the_chain_finishes_after_the_submitting_process_is_gone(chains):
    chain = chains["three_segments"]
    job_id, _log = chain.submitted.stdout.split()
    record = chain.ended()
    assert record["segments"][0]["job_id"] == job_id
    # `run --batch` returned before the first segment had trained anything.
    assert "submitted slurm job" in chain.submitted.stderr and record["state"] == "done"
    status = chain.steps("status", str(chain.run_dir))
    assert status.returncode == 0, status.stderr
    assert "chain done (training reached its end): segment 3 of at most 6, step 9/9" in (
        status.stdout
    )
    jobs = json.loads(chain.steps("jobs", "--json").stdout)["jobs"]
    assert jobs[0]["job_id"] == record["segments"][-1]["job_id"]
    assert jobs[0]["chain"].startswith("chain done")


def test_a_preempted_segment_is_followed_by_one_that_resumes_from_the_last_step(chains):
    chain = chains["preempted"]
    seg = chain.running_segment()
    wait_for(lambda: chain.ledger() == [1, 2], timeout=60, step=0.1)  # held before step 3
    # A job of the higher-priority partition needs the GPU the segment holds: Slurm preempts it.
    urgent = ["sbatch", "-p", "urgent", "--gres=gpu:1", "--output=/dev/null", "--wrap", "true"]
    subprocess.run(urgent, env=chain.env, check=True, capture_output=True)
    show = ["scontrol", "show", "job", seg["job_id"]]

    def preempted() -> bool:
        out = subprocess.run(show, env=chain.env, capture_output=True, text=True).stdout
        return "JobState=PREEMPTED" in out

    wait_for(preempted, timeout=30, step=0.1)
    (chain.root / "go").touch()
    record = chain.ended()
    assert record["state"] == "done", record
    first, second = record["segments"][:2]
    assert first["job_id"] == seg["job_id"] and first["state"] == "PREEMPTED", record
    assert first["failure"]["kind"] == "preemption" and first["failure"]["retryable"] is True
    assert second["steps_before"] == first["steps_after"] == 2
    assert chain.ledger() == list(range(1, 9))


def test_a_requeued_segment_runs_again_and_never_beside_its_successor(chains):
    chain = chains["requeued"]
    seg = chain.running_segment()
    wait_for(lambda: chain.ledger() == [1, 2], timeout=60, step=0.1)  # held before step 3
    queued = chain.record()["next_job_id"]
    subprocess.run(["scontrol", "requeue", seg["job_id"]], env=chain.env, check=True)
    (chain.root / "go").touch()
    # A requeued job waits ~2 min before it is eligible again (Slurm's requeue delay): release
    # it (a release while it still completes is undone, so until it has left the queue).
    try:
        wait_for(lambda: release(chain, seg["job_id"]), timeout=60, step=1.0)
        record = chain.ended(timeout=60)
    except BaseException:
        pytest.fail(f"{chain.record()}\n{job_line(chain, seg['job_id'])}")
    assert record["state"] == "done", record
    again = [s for s in record["segments"] if s["job_id"] == seg["job_id"]]
    assert [s["restart"] for s in again] == [0, 1]
    assert again[0]["state"] == "REQUEUED" and again[1]["steps_before"] == again[0]["steps_after"]
    assert (chain.job_dir / f"{seg['job_id']}-1-logs" / "ray-driver.log").is_file()
    # The successor queued behind the first attempt never trained beside the second: Slurm may
    # start it while the requeued job passes through COMPLETING; it then queues itself again.
    assert queued not in [s["job_id"] for s in record["segments"][:2]]
    spans = [(s["started_utc"], s["ended_utc"]) for s in record["segments"]]
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert chain.ledger() == list(range(1, 9))


def test_a_deterministic_failure_stops_the_chain_after_two_segments_naming_its_kind(chains):
    chain = chains["deterministic"]  # an NCCL timeout (retryable) at step 3, every time
    record = chain.ended()
    assert record["state"] == "stopped"
    segs = record["segments"]
    assert len(segs) == 2 and [s["state"] for s in segs] == ["FAILED", "FAILED"]
    assert segs[0]["steps_after"] == segs[1]["steps_after"] == 2
    assert [s["failure"]["kind"] for s in segs] == ["nccl_timeout", "nccl_timeout"]
    assert segs[1]["failure"]["evidence"].startswith(f"{chain.job_dir}/{segs[1]['job_id']}-logs")
    assert record["reason"] == "segments 1 and 2 failed the same way (nccl_timeout) at step 2"
    wait_for(lambda: chain.queue() == [], timeout=10, step=0.1)  # the queued third is cancelled


def test_a_transient_failure_is_retried_and_the_chain_finishes(chains):
    chain = chains["transient"]  # the Hugging Face hub unreachable once
    record = chain.ended()
    assert record["state"] == "done", record
    first, second = record["segments"][:2]
    assert first["state"] == "FAILED"
    assert first["failure"]["kind"] == "hf_hub_unreachable" and first["failure"]["retryable"]
    assert second["steps_before"] == 1 and record["segments"][-1]["steps_after"] == 4


def test_a_failure_a_retry_cannot_fix_stops_the_chain_at_once(chains):
    chain = chains["gpu_oom"]
    record = chain.ended()
    assert record["state"] == "stopped" and len(record["segments"]) == 1
    assert record["segments"][0]["failure"]["kind"] == "gpu_oom"
    assert record["reason"] == "segment 1 failed with gpu_oom, which a retry cannot fix"
    wait_for(lambda: chain.queue() == [], timeout=10, step=0.1)


def test_a_second_chain_on_the_checkpoint_dir_a_live_chain_trains_is_refused(chains):
    chain = chains["cancelled"]  # held before step 2 (until the next test cancels it)
    chain.running_segment()
    again = ["run", DPO, "-c", "tiny", "--batch", "lab", "--until-done", *SCENARIOS["cancelled"][1]]
    runs = sorted(chain.run_dir.parent.iterdir())
    for res in (chain.steps(*again, "--dry-run"), chain.steps(*again)):  # the dry run says it too
        assert res.returncode == 2 and "E-CHAIN-BUSY" in res.stderr, res.stderr
        assert f"python -m steps cancel {chain.run_dir}" in res.stderr
    assert sorted(chain.run_dir.parent.iterdir()) == runs  # refused before a run dir is written
    queued = [chain.running_segment()["job_id"], chain.record()["next_job_id"]]
    assert sorted(chain.queue("PD,R")) == sorted(queued)  # nothing of a second chain


def test_cancel_stops_the_running_segment_and_the_queued_one(chains):
    chain = chains["cancelled"]
    chain.running_segment()
    wait_for(lambda: chain.ledger(), timeout=60, step=0.1)  # held before step 2
    wait_for(lambda: chain.record()["next_job_id"], timeout=30, step=0.1)
    res = chain.steps("cancel", str(chain.run_dir))
    assert res.returncode == 0 and "every segment of chain" in res.stdout, res.stderr
    wait_for(lambda: chain.queue() == [], timeout=30)
    status = json.loads(chain.steps("status", str(chain.run_dir), "--json").stdout)
    assert status["chain"]["state"] == "cancelled"
    assert status["job"]["state"] == "CANCELLED"
    assert (chain.job_dir / "CHAIN_CANCELLED").exists()
    assert os.path.exists(chain.job_dir / "run.json")


@pytest.fixture
def planner(tmp_path, slurm):  # noqa: F811
    """`python -m steps run rl/nemo_rl/dpo -c tiny --batch lab ...` against the lab, as a user
    (in this process)."""
    stand_in_checkout(tmp_path / "RL")
    (tmp_path / "work").mkdir()
    write_profile(tmp_path, {"FAKE_STEP_SECONDS": "0.1"}, gpu=False)
    env = lab_env(tmp_path, slurm, STEPS_OUTPUT=str(tmp_path / "out"), WANDB_API_KEY=KEY)

    def run(*argv: str, env: dict[str, str] = env) -> CliResult:
        return steps_here("run", DPO, "-c", "tiny", "--batch", "lab", *argv,
                          cwd=tmp_path / "work", env=env)  # fmt: skip

    run.env = env  # type: ignore[attr-defined]
    return run


def test_a_chain_dry_run_shows_the_segment_script_the_deadline_and_one_wandb_run(planner):
    res = planner("--until-done", "--dry-run", "--json", "logger.wandb_enabled=true")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    sbatch = doc["launch"]["sbatch"]
    assert sbatch[-1].endswith("/chain.sbatch") and "--exclusive" in sbatch
    assert sbatch.index("--exclusive") < sbatch.index("--oversubscribe")  # the profile's win
    assert doc["config"]["checkpointing"]["checkpoint_must_save_by"] == "00:00:00:02"
    wandb = doc["config"]["logger"]["wandb"]
    assert wandb["resume"] == "allow" and wandb["id"].startswith("steps-dpo-")
    assert "W-SCHEMA-UNKNOWN" not in res.stdout  # NeMo-RL passes logger.wandb to wandb.init


def test_a_chain_that_could_not_resume_or_has_no_time_to_train_is_refused(planner, tmp_path):
    res = planner("--until-done", "--dry-run", "checkpointing.enabled=false")
    assert res.returncode == 1 and "E-CHAIN-CHECKPOINTING" in res.stdout + res.stderr
    assert "override 'checkpointing.enabled=false'" in res.stdout + res.stderr
    env_toml = tmp_path / "work" / "env.toml"
    env_toml.write_text(env_toml.read_text().replace('"00:00:58"', '"00:01:00"'))
    res = planner("--until-done", "--dry-run")
    assert res.returncode == 1 and "E-CHAIN-TIME" in res.stdout + res.stderr
    res = planner("--max-segments", "3", "--dry-run")
    assert res.returncode == 2 and "--max-segments and --gpu-hours go with --until-done" in (
        res.stderr
    )


def test_a_chain_whose_jobs_python3_is_older_than_3_8_is_refused_by_the_dry_run(planner, tmp_path):
    import glob

    old = sorted(glob.glob("/root/.pyenv/versions/3.[4-7].*/bin/python3"))
    if not old:
        pytest.skip("no python3 older than 3.8 here (a pyenv 3.7)")
    (tmp_path / "old-bin").mkdir()
    (tmp_path / "old-bin" / "python3").symlink_to(old[-1])
    env = {**planner.env, "PATH": f"{tmp_path / 'old-bin'}:{planner.env['PATH']}"}
    res = planner("--until-done", "--dry-run", env=env)
    assert res.returncode == 2 and "E-CHAIN-PYTHON" in res.stderr, res.stdout + res.stderr
    version = Path(old[-1]).parent.parent.name
    assert f"python3 there is {version} ({tmp_path / 'old-bin' / 'python3'})" in res.stderr
    assert "3.8 or later is needed" in res.stderr and "Fix: put a Python 3.8" in res.stderr
    assert planner("--until-done", "--dry-run").returncode == 0  # the bare python3 3.8+: fine


@pytest.fixture
def killed_job(tmp_path, slurm):  # noqa: F811
    """A real lab job (`sleep`) with a one-segment chain record whose segment is that job."""
    from runners.chain.record import ChainRecord, Segment, write_chain
    from runners.chain.rules import now_utc

    env = lab_env(tmp_path, slurm)
    sbatch = ["sbatch", "--parsable", "--requeue", "--output=/dev/null", "--wrap", "sleep 300"]
    job_id = subprocess.run(sbatch, env=env, capture_output=True, text=True, check=True)
    job_id = job_id.stdout.strip().split(";")[0]
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    chain = ChainRecord(
        state="running", checkpoint_dir=str(tmp_path / "ckpt"), job_name="steps-killed",
        log_dir=str(job_dir), segments=[Segment(n=1, job_id=job_id, started_utc=now_utc()[0])],
    )  # fmt: skip
    write_chain(job_dir, {}, chain)
    job_code.stage(job_dir)
    try:
        yield job_id, job_dir, env
    finally:
        subprocess.run(["scancel", job_id], env=env, capture_output=True)


def _end(job_dir: Path, env: dict, job_id: str, code: int) -> dict:
    """The decision program's `end` as the segment script runs it after ray.sub exited with
    `code` (the bare python3 on PATH; the record our side wrote, read back by our side)."""
    from runners.chain.record import ChainRecord

    program = job_code.segment_program(str(job_dir))
    argv = ["python3", "-I", program, "end", str(job_dir), str(code)]
    env = {**env, "SLURM_JOB_ID": job_id, "SLURM_RESTART_COUNT": "0"}
    res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    chain = json.loads((job_dir / "run.json").read_text())["chain"]
    ChainRecord.model_validate(chain)
    return chain["segments"][0]


def test_a_segment_slurm_is_killing_gets_slurms_state_not_failed(killed_job):
    # ray.sub may exit (143) in the seconds Slurm gives a job it kills, and `end` then runs:
    # the controller already says why the job ends, and that is the segment's state.
    job_id, job_dir, env = killed_job
    subprocess.run(["scancel", job_id], env=env, check=True)
    wait_for(lambda: "JobState=CANCELLED" in _job_line(env, job_id), timeout=30, step=0.1)
    seg = _end(job_dir, env, job_id, 143)
    assert (seg["state"], seg["exit_code"]) == ("CANCELLED", 143), seg
    assert seg["failure"]["kind"] == "cancelled" and seg["ended_utc"]


def test_a_segment_being_requeued_is_left_for_its_rerun_to_close(killed_job):
    job_id, job_dir, env = killed_job
    wait_for(lambda: "JobState=RUNNING" in _job_line(env, job_id), timeout=30, step=0.1)
    subprocess.run(["scontrol", "requeue", job_id], env=env, check=True)
    wait_for(lambda: "Restarts=1" in _job_line(env, job_id), timeout=30, step=0.1)
    seg = _end(job_dir, env, job_id, 143)
    assert seg["ended_utc"] is None and seg["state"] == "RUNNING", seg  # `begin` closes it


def _job_line(env: dict, job_id: str) -> str:
    show = ["scontrol", "show", "job", job_id, "-o"]
    return subprocess.run(show, env=env, capture_output=True, text=True).stdout
