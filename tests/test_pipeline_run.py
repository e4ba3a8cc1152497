"""`pipeline run`: the tiny RLVR example end to end against stand-ins, caching, failure, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_toys import REPO, stand_ins, steps_cli, write_pipeline

RLVR = str(REPO / "pipelines" / "tiny_rlvr.yaml")
STAGES = ["prep", "rlvr", "rlvr__to_hf_checkpoint"]


@pytest.fixture
def world(tmp_path: Path):
    nemo, bridge = stand_ins(tmp_path / "upstream")
    env = {
        "MEGATRON_BRIDGE_HOME": str(bridge),
        "NEMO_RL_HOME": "",
        "FAKE_NEMO_RL_LOG": str(tmp_path / "trainings.log"),
    }
    root = tmp_path / "root"

    def run(*extra: str, nemo_rl: bool = True, more_env: dict | None = None, file: str = RLVR):
        args = ["pipeline", "run", file, "--root", str(root), *extra]
        if nemo_rl:
            args += ["--nemo-rl", str(nemo)]
        return steps_cli(*args, cwd=tmp_path, env={**env, **(more_env or {})})

    return run, root, tmp_path


def record(root: Path, stage: str) -> dict:
    return json.loads((root / stage / "record.json").read_text())


def trainings(tmp_path: Path) -> int:
    log = tmp_path / "trainings.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_tiny_rlvr_pipeline_runs_end_to_end(world):
    run, root, _ = world
    proc = run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [record(root, s)["status"] for s in STAGES] == ["completed"] * 3
    manifest = json.loads((root / "prep" / "data" / "manifest.json").read_text())
    assert manifest["splits"]["train"]["shards"]  # rl_prep really ran
    assert (root / "rlvr" / "checkpoint" / "step_2" / "training_info.json").is_file()
    hf = root / "rlvr__to_hf_checkpoint" / "hf"
    assert {p.name for p in hf.iterdir()} >= {"config.json", "model.safetensors", "tokenizer.json"}
    conv = record(root, "rlvr__to_hf_checkpoint")
    assert conv["inserted"] is True and conv["exit_status"] == 0
    assert conv["inputs"]["checkpoint"]["source"] == "rlvr.checkpoint"
    rlvr = record(root, "rlvr")
    assert rlvr["inputs"]["train"]["fingerprint"]["manifest_sha256"]
    assert rlvr["inputs"]["policy"]["fingerprint"] == {"hub": "Qwen/Qwen3-0.6B"}
    assert len(rlvr["config_hash"]) == 64 and rlvr["duration_s"] >= 0
    summary = json.loads((root / "pipeline.json").read_text())
    assert summary["status"] == "completed"
    assert summary["targets"] == {"rlvr__to_hf_checkpoint.hf": str(hf)}
    assert not list(root.rglob("*.tmp"))


def test_rerun_of_a_completed_pipeline_does_no_step_work(world):
    run, root, tmp_path = world
    assert run().returncode == 0
    logs = {s: (root / s / "stage.log").stat().st_mtime_ns for s in STAGES}
    runs = sorted(p for p in root.rglob("_runs/*/*/*") if p.is_dir())
    proc = run()
    assert proc.returncode == 0, proc.stderr
    assert [ln.split(":")[1].split()[0] for ln in proc.stdout.splitlines()[1:]] == ["cached"] * 3
    assert {s: (root / s / "stage.log").stat().st_mtime_ns for s in STAGES} == logs
    assert sorted(p for p in root.rglob("_runs/*/*/*") if p.is_dir()) == runs
    assert trainings(tmp_path) == 1


def test_failed_stage_stops_the_pipeline_and_the_next_run_resumes_there(world):
    run, root, _tmp_path = world
    proc = run(more_env={"FAKE_NEMO_RL_FAIL": "1"})
    assert proc.returncode == 3
    assert "rlvr: FAILED (exit 3)" in proc.stdout and "Traceback" not in proc.stderr
    assert record(root, "prep")["status"] == "completed"
    failed = record(root, "rlvr")
    assert (failed["status"], failed["exit_status"]) == ("failed", 3)
    assert "CUDA out of memory" in (root / "rlvr" / "stage.log").read_text()
    assert not (root / "rlvr__to_hf_checkpoint" / "record.json").exists()
    assert json.loads((root / "pipeline.json").read_text())["status"] == "failed"

    proc = run()
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    assert any(ln.startswith("prep: cached") for ln in lines)
    assert any(ln.startswith("rlvr: running") for ln in lines)
    assert record(root, "rlvr__to_hf_checkpoint")["status"] == "completed"


def test_force_reruns_the_stage_and_what_depends_on_it(world):
    run, root, tmp_path = world
    assert run().returncode == 0
    proc = run("--force", "rlvr")
    assert proc.returncode == 0, proc.stdout
    out = proc.stdout
    assert "prep: cached" in out and "rlvr: running" in out
    assert "rlvr__to_hf_checkpoint: running" in out  # its input changed
    assert trainings(tmp_path) == 2
    assert list((root / "rlvr" / "_stale").iterdir())  # the old checkpoint is kept aside


def test_from_runs_that_stage_and_after_only(world):
    run, _root, tmp_path = world
    assert run().returncode == 0
    proc = run("--from", "rlvr__to_hf_checkpoint")
    assert proc.returncode == 0, proc.stdout
    assert "prep: not selected" in proc.stdout and "rlvr: not selected" in proc.stdout
    assert "rlvr__to_hf_checkpoint: running" in proc.stdout
    assert trainings(tmp_path) == 1


def test_unknown_stage_for_force_is_named(world):
    run, _, _ = world
    proc = run("--force", "rlv")
    assert proc.returncode == 2 and "E-PIPELINE-STAGE" in proc.stderr and "rlvr" in proc.stderr


def test_without_nemo_rl_the_gpu_stage_stops_at_not_found(world):
    run, root, _ = world
    proc = run(nemo_rl=False)
    assert proc.returncode == 2
    assert "E-NEMO-RL-NOT-FOUND" in proc.stdout and "--nemo-rl" in proc.stdout
    assert record(root, "prep")["status"] == "completed"
    assert record(root, "rlvr")["status"] == "failed"


def test_dry_run_checks_inputs_not_yet_produced_by_planned_type(world):
    run, root, _ = world
    proc = run("--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "input train <- prep.data: not produced yet, planned nemo_gym_jsonl" in proc.stdout
    assert "input checkpoint <- rlvr.checkpoint: not produced yet" in proc.stdout
    assert "E-INPUT-MISSING" not in proc.stdout
    assert not list(root.rglob("record.json"))


def test_dry_run_without_nemo_rl_reports_not_found(world):
    run, _, _ = world
    proc = run("--dry-run", nemo_rl=False)
    assert proc.returncode == 2
    assert "E-NEMO-RL-NOT-FOUND" in proc.stdout


def test_an_input_without_a_path_stops_the_run(world):
    run, _, tmp_path = world
    text = (
        Path(RLVR)
        .read_text()
        .replace("path: ../steps/data_prep/rl_prep/data/blend_tiny.yaml", "path: ???")
    )
    proc = run(file=str(write_pipeline(tmp_path / "unset.yaml", text)))
    assert proc.returncode == 1 and "E-PIPELINE-INPUT-UNSET" in proc.stderr


def test_a_changed_override_reruns_that_stage_and_its_dependents_only(world):
    run, root, tmp_path = world
    assert run().returncode == 0
    text = (
        Path(RLVR)
        .read_text()
        .replace(
            "    config: nemo_gym_tiny\n",
            "    config: nemo_gym_tiny\n    overrides: [grpo.max_num_steps=2]\n",
        )
        .replace("../steps/", f"{REPO}/steps/")
    )
    changed = write_pipeline(tmp_path / "changed.yaml", text)
    before = record(root, "rlvr")["config_hash"]
    proc = run(file=str(changed))
    assert proc.returncode == 0, proc.stdout
    assert "prep: cached" in proc.stdout and "rlvr: running" in proc.stdout
    assert record(root, "rlvr")["config_hash"] != before
    assert trainings(tmp_path) == 2


def test_tiny_dpo_example_dry_run_is_clean_with_stand_ins(world):
    run, _, _ = world
    proc = run("--dry-run", file=str(REPO / "pipelines" / "tiny_dpo.yaml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "input train <- prep.data: not produced yet, planned preference_jsonl" in proc.stdout
