"""`pipeline run`: the tiny RLVR example end to end against stand-ins, caching, failure, resume,
interrupts, secrets and dry runs. The pipeline runs in-process; its stages are child processes.

Tests that start from a completed pipeline share one real run: it is made once per module and
its root restored (times and all) before each such test.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pipeline_toys import REPO, stand_ins, write_pipeline

from runners.config.compile_once import COMPILES
from steps.cli import main

RLVR = str(REPO / "pipelines" / "tiny_rlvr.yaml")
STAGES = ["prep", "rlvr", "rlvr__to_hf_checkpoint"]
SECRET = "hf_SUPERSECRET_abc123"
pytestmark = pytest.mark.slow  # `pipeline run` runs each stage in a child process


@dataclass
class Result:
    returncode: int
    stdout: str = ""
    stderr: str = ""
    compiles: Counter = field(default_factory=Counter)  # config file -> compiles in this process


class World:
    """A pipeline root, stand-in NeMo-RL and Megatron-Bridge, and `pipeline run` in-process."""

    def __init__(self, base: Path, upstream: tuple[Path, Path], capsys=None) -> None:
        self.base, self.root, self.capsys = base, base / "root", capsys
        self.nemo, bridge = upstream
        self.env = {
            "MEGATRON_BRIDGE_HOME": str(bridge),
            "NEMO_RL_HOME": "",
            "FAKE_NEMO_RL_LOG": str(base / "trainings.log"),
            "STEPS_CACHE_DIR": str(base / ".cache"),
            # the tiny configs read ${oc.env:STEPS_OUTPUT,...}: its value is part of a stage's
            # cache key (run pins it into config.yaml), so a world keeps one across its runs
            "STEPS_OUTPUT": str(base / "output"),
        }

    def run(self, *extra: str, nemo_rl: bool = True, more_env: dict | None = None, file=RLVR):
        args = ["pipeline", "run", str(file), "--root", str(self.root), *extra]
        if nemo_rl:
            args += ["--nemo-rl", str(self.nemo)]
        with pytest.MonkeyPatch.context() as mp:
            mp.delenv("STEPS_PATH", raising=False)
            for k, v in {**self.env, **(more_env or {})}.items():
                mp.setenv(k, v)
            mp.chdir(self.base)
            before = Counter(COMPILES)
            code = main(args)
        compiles = Counter(COMPILES)
        compiles.subtract(before)
        if self.capsys is None:
            return Result(code, compiles=+compiles)
        out = self.capsys.readouterr()
        return Result(code, out.out, out.err, +compiles)

    def record(self, stage: str) -> dict:
        return json.loads((self.root / stage / "record.json").read_text())

    def summary(self) -> dict:
        return json.loads((self.root / "pipeline.json").read_text())

    def trainings(self) -> int:
        log = self.base / "trainings.log"
        return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.fixture(scope="module")
def upstream(tmp_path_factory) -> tuple[Path, Path]:
    return stand_ins(tmp_path_factory.mktemp("upstream"))


@pytest.fixture(scope="module")
def completed(tmp_path_factory, upstream) -> tuple[Path, Path, Counter]:
    """(base, snapshot, the configs it compiled) of one real run of the tiny RLVR pipeline."""
    base = tmp_path_factory.mktemp("completed")
    result = World(base, upstream).run()
    assert result.returncode == 0
    snapshot = tmp_path_factory.mktemp("snapshot")
    shutil.copytree(base / "root", snapshot / "root", symlinks=True)
    shutil.copy2(base / "trainings.log", snapshot / "trainings.log")
    return base, snapshot, result.compiles


@pytest.fixture
def done(completed, upstream, capsys) -> World:
    """A world whose pipeline has completed once (restored from the module's snapshot)."""
    base, snapshot, _ = completed
    shutil.rmtree(base / "root")
    shutil.copytree(snapshot / "root", base / "root", symlinks=True)
    shutil.copy2(snapshot / "trainings.log", base / "trainings.log")
    return World(base, upstream, capsys)


@pytest.fixture
def world(tmp_path, upstream, capsys) -> World:
    return World(tmp_path, upstream, capsys)


def one_stage(tmp_path: Path, overrides: list[str]) -> Path:
    """A pipeline of one rlvr stage on the shipped tiny Gym rows."""
    rows = REPO / "steps" / "rl" / "nemo_rl" / "rlvr" / "data" / "tiny_gym_train.jsonl"
    text = f"""\
        name: one
        inputs:
          rows: {{type: nemo_gym_jsonl, path: {rows}}}
          policy: {{type: hf_checkpoint, path: Qwen/Qwen3-0.6B}}
        stages:
          - id: rlvr
            step: rl/nemo_rl/rlvr
            config: nemo_gym_tiny
            overrides: {json.dumps(overrides)}
            inputs: {{train: inputs.rows, validation: inputs.rows, policy: inputs.policy}}
        targets: [rlvr.checkpoint]
        """
    return write_pipeline(tmp_path / "one.yaml", text)


def test_tiny_rlvr_pipeline_runs_end_to_end(done):
    root = done.root
    assert [done.record(s)["status"] for s in STAGES] == ["completed"] * 3
    manifest = json.loads((root / "prep" / "data" / "manifest.json").read_text())
    assert manifest["splits"]["train"]["shards"]  # rl_prep really ran
    assert (root / "rlvr" / "checkpoint" / "step_2" / "training_info.json").is_file()
    hf = root / "rlvr__to_hf_checkpoint" / "hf"
    assert {p.name for p in hf.iterdir()} >= {"config.json", "model.safetensors", "tokenizer.json"}
    conv = done.record("rlvr__to_hf_checkpoint")
    assert conv["inserted"] is True and conv["exit_status"] == 0
    assert conv["inputs"]["checkpoint"]["source"] == "rlvr.checkpoint"
    rlvr = done.record("rlvr")
    assert rlvr["inputs"]["train"]["fingerprint"]["digest"].startswith("xxh3_128:")
    assert rlvr["inputs"]["policy"]["fingerprint"] == {"hub": "Qwen/Qwen3-0.6B"}
    assert len(rlvr["config_hash"]) == 64 and rlvr["duration_s"] >= 0
    summary = done.summary()
    assert summary["status"] == "completed"
    assert summary["targets"] == {"rlvr__to_hf_checkpoint.hf": str(hf)}
    assert not list(root.rglob("*.tmp"))


def test_rerun_of_a_completed_pipeline_does_no_step_work(done):
    logs = {s: (done.root / s / "stage.log").stat().st_mtime_ns for s in STAGES}
    runs = sorted(p for p in done.root.rglob("_runs/*/*/*") if p.is_dir())
    proc = done.run()
    assert proc.returncode == 0, proc.stderr
    assert [ln.split(":")[1].split()[0] for ln in proc.stdout.splitlines()[1:]] == ["cached"] * 3
    assert {s: (done.root / s / "stage.log").stat().st_mtime_ns for s in STAGES} == logs
    assert sorted(p for p in done.root.rglob("_runs/*/*/*") if p.is_dir()) == runs
    assert done.trainings() == 1


def test_failed_stage_stops_the_pipeline_and_the_next_run_resumes_there(world):
    proc = world.run(more_env={"FAKE_NEMO_RL_FAIL": "1"})
    assert proc.returncode == 3
    assert "rlvr: FAILED (exit 3)" in proc.stdout and "Traceback" not in proc.stderr
    assert world.record("prep")["status"] == "completed"
    failed = world.record("rlvr")
    assert (failed["status"], failed["exit_status"]) == ("failed", 3)
    assert "CUDA out of memory" in (world.root / "rlvr" / "stage.log").read_text()
    assert not (world.root / "rlvr__to_hf_checkpoint" / "record.json").exists()
    assert world.summary()["status"] == "failed"

    proc = world.run()
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    assert any(ln.startswith("prep: cached") for ln in lines)
    assert any(ln.startswith("rlvr: running") for ln in lines)
    assert world.record("rlvr__to_hf_checkpoint")["status"] == "completed"


def test_force_reruns_the_stage_and_a_later_one_only_if_its_input_content_changed(done):
    proc = done.run("--force", "rlvr")
    assert proc.returncode == 0, proc.stdout
    out = proc.stdout
    assert "prep: cached" in out and "rlvr: running" in out
    # the stand-in trainer writes the same bytes again: its input's content digest is unchanged
    assert "rlvr__to_hf_checkpoint: cached" in out
    assert done.trainings() == 2
    assert list((done.root / "rlvr" / "_stale").iterdir())  # the old checkpoint is kept aside


def test_from_runs_that_stage_and_after_only(done):
    proc = done.run("--from", "rlvr__to_hf_checkpoint")
    assert proc.returncode == 0, proc.stdout
    assert "prep: not selected" in proc.stdout and "rlvr: not selected" in proc.stdout
    assert "rlvr__to_hf_checkpoint: running" in proc.stdout
    assert done.trainings() == 1


def test_unknown_stage_for_force_is_named(world):
    proc = world.run("--force", "rlv")
    assert proc.returncode == 2 and "E-PIPELINE-STAGE" in proc.stderr and "rlvr" in proc.stderr


def test_without_nemo_rl_the_gpu_stage_stops_at_not_found(done):
    proc = done.run("--force", "rlvr", nemo_rl=False)
    assert proc.returncode == 2
    assert "E-NEMO-RL-NOT-FOUND" in proc.stdout and "--nemo-rl" in proc.stdout
    assert done.record("prep")["status"] == "completed"
    assert done.record("rlvr")["status"] == "failed"
    assert done.summary()["status"] == "failed"


def test_a_pipeline_run_compiles_each_stage_config_once(completed, done, world):
    """The plan, the cache key and the checks share one compile per stage (each stage's `run`
    child compiles it once more, in its own process: the config.yaml that runs is its own)."""
    configs = {done.record(s)["config"]: 1 for s in STAGES}
    assert len(configs) == 3  # two of them are named tiny.yaml, in different steps
    assert completed[2] == configs
    assert world.run("--dry-run").compiles == configs
    rerun = done.run()
    assert "cached" in rerun.stdout and rerun.compiles == configs  # the planner's only


def test_dry_run_checks_inputs_not_yet_produced_by_planned_type_and_writes_nothing(world):
    proc = world.run("--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "input train <- prep.data: not produced yet, planned nemo_gym_jsonl" in proc.stdout
    assert "input checkpoint <- rlvr.checkpoint: not produced yet" in proc.stdout
    assert "E-INPUT-MISSING" not in proc.stdout
    assert proc.stdout.rstrip().endswith("dry run: clean (3 stages)")
    assert not world.root.exists()


def test_dry_run_without_nemo_rl_or_megatron_bridge_is_clean_with_warnings(world):
    world.env["MEGATRON_BRIDGE_HOME"] = str(world.base / "no-bridge")
    proc = world.run("--dry-run", nemo_rl=False)
    assert proc.returncode == 0, proc.stdout
    assert "warning: W-NEMO-RL-NOT-FOUND" in proc.stdout
    assert "warning: W-MEGATRON-BRIDGE-NOT-FOUND" in proc.stdout  # never an E- as a warning
    assert "dry run: clean (3 stages)" in proc.stdout
    assert not world.root.exists()
    assert sorted(p.name for p in world.base.iterdir()) == [".cache"]


def test_dry_run_reports_a_stage_config_error_and_exits_1(world):
    text = (
        Path(RLVR)
        .read_text()
        .replace(
            "    config: nemo_gym_tiny\n",
            "    config: nemo_gym_tiny\n    overrides: [grpo.max_num_steps=abc]\n",
        )
    )
    text = text.replace("../steps/", f"{REPO}/steps/")
    proc = world.run("--dry-run", file=write_pipeline(world.base / "bad.yaml", text))
    assert proc.returncode == 1, proc.stdout
    assert "E-SCHEMA-TYPE" in proc.stdout and "dry run: problems found" in proc.stdout
    assert not world.root.exists()


def test_an_input_without_a_path_stops_the_run(world):
    text = (
        Path(RLVR)
        .read_text()
        .replace("path: ../steps/data_prep/rl_prep/data/blend_tiny.yaml", "path: ???")
    )
    proc = world.run(file=write_pipeline(world.base / "unset.yaml", text))
    assert proc.returncode == 1 and "E-PIPELINE-INPUT-UNSET" in proc.stderr


def test_a_changed_override_reruns_that_stage_and_its_dependents_only(done):
    text = (
        Path(RLVR)
        .read_text()
        .replace(
            "    config: nemo_gym_tiny\n",
            "    config: nemo_gym_tiny\n    overrides: [grpo.max_num_steps=2]\n",
        )
        .replace("../steps/", f"{REPO}/steps/")
    )
    changed = write_pipeline(done.base / "changed.yaml", text)
    before = done.record("rlvr")["config_hash"]
    proc = done.run(file=changed)
    assert proc.returncode == 0, proc.stdout
    assert "prep: cached" in proc.stdout and "rlvr: running" in proc.stdout
    assert done.record("rlvr")["config_hash"] != before
    assert done.trainings() == 2


def test_tiny_dpo_example_dry_run_is_clean_with_stand_ins(world):
    proc = world.run("--dry-run", file=REPO / "pipelines" / "tiny_dpo.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "input train <- prep.data: not produced yet, planned preference_jsonl" in proc.stdout


def test_a_secret_in_a_stage_override_reaches_the_job_only_through_its_environment(world):
    file = one_stage(world.base, [f"++env.nemo_gym.hf_token={SECRET}"])
    env_log = world.base / "job_env.json"
    proc = world.run(file=file, more_env={"FAKE_NEMO_RL_ENV_LOG": str(env_log)})
    assert proc.returncode == 0, proc.stdout
    assert json.loads(env_log.read_text()) == {"STEPS_SECRET_ENV_NEMO_GYM_HF_TOKEN": SECRET}
    record = world.record("rlvr")
    assert record["status"] == "completed"
    assert (
        "++env.nemo_gym.hf_token=${oc.env:STEPS_SECRET_ENV_NEMO_GYM_HF_TOKEN}"
        in (
            record["command"]  # the child's argv: a reference, never the value
        )
    )
    written = [p for p in world.base.rglob("*") if p.is_file() and p not in (file, env_log)]
    assert len(written) > 5  # records, log, run dir, checkpoint
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]
    assert SECRET not in proc.stdout + proc.stderr

    for args in (["plan", str(file)], ["plan", str(file), "--json"]):
        assert main(args) == 0
        out = world.capsys.readouterr()
        assert "hf_token" in out.out and SECRET not in out.out + out.err


def test_dry_run_never_shows_a_secret_override(world):
    file = one_stage(world.base, [f"++env.nemo_gym.hf_token={SECRET}", f"grpo.seed={SECRET}"])
    proc = world.run("--dry-run", file=file)
    assert proc.returncode == 1  # grpo.seed is not an integer: the finding quotes the value
    assert "E-SCHEMA-TYPE" in proc.stdout and SECRET not in proc.stdout + proc.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_stops_the_stage_and_records_the_stage_and_pipeline_as_interrupted(
    world, signum
):
    marker = world.base / "job.pid"
    file = one_stage(world.base, [])

    def interrupt_when_the_job_runs() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signum)  # Ctrl-C, or a scheduler cancelling the job

    threading.Thread(target=interrupt_when_the_job_runs, daemon=True).start()
    proc = world.run(file=file, more_env={"FAKE_NEMO_RL_WAIT": str(marker)})
    assert proc.returncode == 130
    assert (world.base / "job.pid.signal").read_text() == str(int(signum))  # forwarded
    job = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(job, 0)  # the job is gone, not orphaned
    record = world.record("rlvr")
    assert (record["status"], record["signal"]) == ("interrupted", signum.name)
    assert record["finished"] >= record["started"]
    assert world.summary()["status"] == "interrupted"
    assert world.summary()["stages"]["rlvr"]["status"] == "interrupted"
    assert "interrupted" in proc.stderr and "Traceback" not in proc.stderr


def test_json_prints_one_document_progress_on_stderr(done, world):
    cached = done.run("--json")
    assert cached.returncode == 0, cached.stderr
    doc = json.loads(cached.stdout)  # the whole stdout is one document
    assert doc["ok"] is True and doc["exit_code"] == 0 and doc["pipeline"]
    assert doc["summary"]["status"] == "completed" and "cached" in cached.stderr
    dry = world.run("--dry-run", "--json")
    doc = json.loads(dry.stdout)
    assert doc["ok"] is True and doc["dry_run"] is True and doc["summary"] is None
    assert "dry run: clean" in dry.stderr and not world.root.exists()


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        pytest.skip("this kernel does not list a process's children in /proc")
    return [int(c) for c in text.split()]


def test_ctrl_c_after_the_stage_exits_while_its_outputs_are_checked_records_interrupted(tmp_path):
    """The window between a stage's exit and its record's last write (the output's contract
    check reads every row): a Ctrl-C there once left the record saying "running"."""
    rows = tmp_path / "rows.jsonl"
    row = {
        "responses_create_params": {"input": [{"role": "user", "content": "x" * 2000}]},
        "agent_ref": {"type": "responses_api_agents", "name": "math_agent"},
    }
    with open(rows, "w", encoding="utf-8") as fh:
        for i in range(12_000):  # about 25 MB: the output check takes a while, in one process
            fh.write(json.dumps({**row, "id": i}) + "\n")
    (tmp_path / "blend.yaml").write_text(f"datasets:\n  - name: rows\n    path: {rows}\n")
    file = write_pipeline(
        tmp_path / "p.yaml",
        f"""\
        name: window
        inputs:
          blend: {{type: data_blend, path: {tmp_path / "blend.yaml"}}}
        stages:
          - id: prep
            step: data_prep/rl_prep
            config: tiny
            overrides: ["shard_size=64MB", "output_dir={tmp_path / "out"}"]
            inputs: {{blend: inputs.blend}}
        targets: [prep.data]
        """,
    )
    root = tmp_path / "root"
    env = {k: v for k, v in os.environ.items() if k != "STEPS_PATH"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "steps", "pipeline", "run", str(file), "--root", str(root)],
        cwd=tmp_path,
        env={**env, "STEPS_CACHE_DIR": str(tmp_path / ".cache"), "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen, deadline = False, time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        kids = children(proc.pid)
        seen = seen or bool(kids)
        if seen and not kids:  # the stage's process is gone: the pipeline checks its output
            proc.send_signal(signal.SIGINT)
            break
        time.sleep(0.002)
    _, err = proc.communicate(timeout=120)
    assert seen and proc.returncode == 130, (proc.returncode, err)
    record = json.loads((root / "prep" / "record.json").read_text())
    assert record["status"] == "interrupted" and record["signal"] == "SIGINT"
    assert record["finished"] >= record["started"]
    summary = json.loads((root / "pipeline.json").read_text())
    assert (summary["status"], summary["stages"]["prep"]["status"]) == ("interrupted",) * 2


def test_a_killed_driver_takes_its_running_stage_with_it(world):
    """kill -9 of `pipeline run` cannot forward anything: the stage (in its own process group)
    ends by the parent-death signal instead of training on, orphaned (issue 39 case 6)."""
    marker = world.base / "job.pid"
    file = one_stage(world.base, [])
    env = {**os.environ, **world.env, "FAKE_NEMO_RL_WAIT": str(marker), "PYTHONPATH": str(REPO)}
    env.pop("STEPS_PATH", None)
    argv = [sys.executable, "-m", "steps", "pipeline", "run", str(file), "--root",
            str(world.root), "--nemo-rl", str(world.nemo)]  # fmt: skip
    driver = subprocess.Popen(argv, cwd=world.base, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline and driver.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), "the stage's job never started"
    time.sleep(0.2)  # the pid is written
    job = int(marker.read_text())
    driver.kill()
    driver.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(job, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(job, signal.SIGKILL)
    raise AssertionError("the stage's job outlived its killed driver")


def test_a_forced_rerun_keeps_only_the_last_output_aside(tmp_path):
    from types import SimpleNamespace

    from runners.pipeline.stage import move_aside

    sdir = tmp_path / "rlvr"
    out = sdir / "checkpoints"
    stage = SimpleNamespace(outputs={"ckpt": SimpleNamespace(value=str(out))})
    for run in range(3):
        out.mkdir(parents=True)
        (out / "step_1").write_text(f"run {run}")
        move_aside(stage, sdir)
    [kept] = (sdir / "_stale").iterdir()
    assert (kept / "step_1").read_text() == "run 2" and not out.exists()
