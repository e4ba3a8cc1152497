"""`run convert/megatron_to_hf`: latest step and iteration, Megatron-Bridge argv, skip, the
worker run as a child of the CLI (here in-process, with a stand-in worker that records its argv)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from run_fixtures import clean_env, only_run_dir

from runners.convert import latest_iteration

WORKER = (
    "import json, os, sys\n"
    "json.dump({'argv': sys.argv, 'cwd': os.getcwd()}, open(os.environ['FAKE_MB_RECORD'], 'w'))\n"
)


def _nemo_rl_run(root: Path) -> Path:
    """A NeMo-RL checkpoint_dir: step_2 and step_10, each with two Megatron iterations."""
    for step in (2, 10):
        for it in (0, step):
            it_dir = root / f"step_{step}" / "policy" / "weights" / f"iter_{it:07d}"
            it_dir.mkdir(parents=True)
            (it_dir / "metadata.json").write_text('{"sharded_backend": "torch_dist"}')
            (it_dir / ".metadata").write_bytes(b"")
            (it_dir / "run_config.yaml").write_text("model: {}\n")
    return root


def _bridge(root: Path) -> Path:
    script = root / "scripts" / "conversion" / "run_conversion.py"
    script.parent.mkdir(parents=True)
    script.write_text(WORKER, encoding="utf-8")
    return root


def test_latest_iteration_of_a_nemo_rl_run_a_weights_folder_and_an_iter_folder(
    tmp_path, steps_in_process
):
    run = _nemo_rl_run(tmp_path / "ckpt")
    latest = run / "step_10" / "policy" / "weights" / "iter_0000010"
    assert latest_iteration(run) == latest
    assert latest_iteration(run / "step_2") == run / "step_2/policy/weights/iter_0000002"
    assert latest_iteration(run / "step_10" / "policy" / "weights") == latest
    assert latest_iteration(latest) == latest
    assert latest_iteration(tmp_path) is None


def test_cpu_export_execs_the_bridge_worker_with_the_latest_iteration(tmp_path, steps_in_process):
    run = _nemo_rl_run(tmp_path / "ckpt")
    bridge = _bridge(tmp_path / "mb")
    record = tmp_path / "record.json"
    env = clean_env(tmp_path, FAKE_MB_RECORD=str(record), STEPS_OUTPUT=str(tmp_path / "out"))
    proc = steps_in_process(
        "run",
        "convert/megatron_to_hf",
        "-c",
        "tiny",
        f"megatron_path={run}",
        f"megatron_bridge.root={bridge}",
        "--runs-dir",
        str(tmp_path / "runs"),
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rec = json.loads(record.read_text())
    assert rec["cwd"] == str(bridge)
    assert rec["argv"][1:] == [
        "export",
        "--device",
        "cpu",
        "--hf-model",
        "Qwen/Qwen3-0.6B",
        "--megatron-path",
        str(run / "step_10/policy/weights/iter_0000010"),
        "--hf-path",
        str(tmp_path / "out" / "megatron_to_hf" / "hf"),
        "--torch-dtype",
        "bfloat16",
        "--tp",
        "1",
        "--pp",
        "1",
        "--ep",
        "1",
        "--etp",
        "1",
    ]
    record_json = json.loads(
        (only_run_dir(tmp_path / "runs", "convert/megatron_to_hf") / "run.json").read_text()
    )
    assert record_json["command"][0] == sys.executable


def test_distributed_export_runs_under_torchrun(tmp_path, steps_in_process):
    run = _nemo_rl_run(tmp_path / "ckpt")
    bridge = _bridge(tmp_path / "mb")
    proc = steps_in_process(
        "run",
        "convert/megatron_to_hf",
        f"megatron_path={run}",
        "hf_model_id=Qwen/Qwen3-0.6B",
        f"hf_path={tmp_path / 'hf'}",
        f"megatron_bridge.root={bridge}",
        "parallel.ep=8",
        "strict=false",
        "--dry-run",
        "--json",
        "--runs-dir",
        str(tmp_path / "runs"),
        cwd=tmp_path,
        env=clean_env(tmp_path),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cmd = json.loads(proc.stdout)["command"]
    assert cmd[:4] == ["torchrun", "--nproc_per_node", "8", "scripts/conversion/run_conversion.py"]
    assert cmd[4:7] == ["export", "--device", "gpu"]
    assert cmd[cmd.index("--ep") + 1] == "8" and "--not-strict" in cmd


def test_existing_hf_output_is_skipped_unless_forced(tmp_path, steps_in_process):
    run = _nemo_rl_run(tmp_path / "ckpt")
    bridge = _bridge(tmp_path / "mb")
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{}")
    record = tmp_path / "record.json"
    env = clean_env(tmp_path, FAKE_MB_RECORD=str(record))
    args = [
        "convert/megatron_to_hf",
        "-c",
        "tiny",
        f"megatron_path={run}",
        "hf_path=hf",
        f"megatron_bridge.root={bridge}",
        "--runs-dir",
        str(tmp_path / "runs"),
    ]
    proc = steps_in_process("run", *args, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "conversion skipped" in proc.stderr and not record.exists()
    proc = steps_in_process("run", *args, "--force", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(record.read_text())["argv"][-1] == "1"


def test_a_skipped_conversion_with_json_prints_one_document(tmp_path, steps_in_process):
    run = _nemo_rl_run(tmp_path / "ckpt")
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{}")
    args = ["convert/megatron_to_hf", "-c", "tiny", f"megatron_path={run}", "hf_path=hf",
            f"megatron_bridge.root={_bridge(tmp_path / 'mb')}", "--runs-dir",
            str(tmp_path / "runs"), "--json"]  # fmt: skip
    proc = steps_in_process("run", *args, cwd=tmp_path, env=clean_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["command"] is None  # one document: nothing ran


def test_missing_bridge_is_an_error_with_the_fix(tmp_path, steps_in_process):
    run = _nemo_rl_run(tmp_path / "ckpt")
    proc = steps_in_process(
        "run",
        "convert/megatron_to_hf",
        "-c",
        "tiny",
        f"megatron_path={run}",
        f"megatron_bridge.root={tmp_path / 'none'}",
        "--runs-dir",
        str(tmp_path / "runs"),
        cwd=tmp_path,
        env=clean_env(tmp_path),
    )
    assert proc.returncode != 0
    assert "E-MEGATRON-BRIDGE-NOT-FOUND" in proc.stderr and "Traceback" not in proc.stderr
