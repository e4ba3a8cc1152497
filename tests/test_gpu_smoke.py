"""bench/gpu_smoke.sh up to the launch (CI has no GPU), and the tiny model it trains."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from run_fixtures import REPO, clean_env, fake_checkout

SMOKE = REPO / "bench" / "gpu_smoke.sh"
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


def _smoke(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SMOKE), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def _env(tmp_path: Path) -> dict[str, str]:
    """No nvidia-smi on PATH (as on CI), steps run by this Python."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    return {
        **clean_env(tmp_path),
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "STEPS_PYTHON": sys.executable,
    }


def test_tiny_qwen3_is_a_checkpoint_the_hf_contract_accepts(tmp_path):
    out = tmp_path / "model"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "tiny_qwen3.py"), str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    check = subprocess.run(
        [sys.executable, "-m", "steps", "validate", "hf_checkpoint", str(out), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    config = json.loads((out / "config.json").read_text())
    raw = (out / "model.safetensors").read_bytes()
    header = json.loads(raw[8 : 8 + struct.unpack("<Q", raw[:8])[0]])
    # Qwen3's parameter names and shapes (4 query heads, 2 KV heads of 16, untied head).
    assert header["model.layers.1.self_attn.k_proj.weight"]["shape"] == [32, 64]
    assert header["model.layers.0.self_attn.q_norm.weight"]["shape"] == [16]
    assert header["lm_head.weight"]["shape"] == [config["vocab_size"], config["hidden_size"]]
    end = max(t["data_offsets"][1] for k, t in header.items() if k != "__metadata__")
    assert len(raw) == 8 + struct.unpack("<Q", raw[:8])[0] + end
    tokenizer = json.loads((out / "tokenizer.json").read_text())
    assert len(set(tokenizer["model"]["vocab"])) == 256
    ids = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    assert config["eos_token_id"] == ids["<|im_end|>"] and config["pad_token_id"] == ids["<|pad|>"]


@needs_bash
def test_without_a_gpu_the_smoke_stops_before_anything_with_exit_2(tmp_path):
    checkout = fake_checkout(tmp_path / "nemo-rl")
    proc = _smoke(str(checkout), "--work", str(tmp_path / "work"), env=_env(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gpu_smoke: no NVIDIA GPU here (nvidia-smi -L lists none)")
    assert not (tmp_path / "work").exists()  # nothing was made, nothing launched


@needs_bash
def test_check_only_makes_the_model_and_runs_the_preflight_of_the_real_command(tmp_path):
    checkout = fake_checkout(tmp_path / "nemo-rl")
    work = tmp_path / "work"
    args = (str(checkout), "--work", str(work), "--check-only", "--launcher", sys.executable)
    proc = _smoke(*args, env=_env(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith(
        f"gpu_smoke: check-only: model and preflight OK in {work};"
        " not launched (no --check-only to train)"
    )
    assert f"argv: {sys.executable} examples/run_dpo.py --config {work}/runs/" in proc.stdout
    assert "config: " + str(REPO / "steps/rl/nemo_rl/dpo/config/tiny_dtensor.yaml") in proc.stdout
    # The DTensor workers' venv points at the launcher's interpreter (no uv, no network).
    worker = work / "venvs/nemo_rl.models.policy.workers.dtensor_policy_worker.DTensorPolicyWorker"
    assert os.access(worker / "bin/python", os.X_OK)
    assert sys.executable in (worker / "bin/python").read_text()


@needs_bash
def test_a_folder_that_is_not_a_checkout_is_a_usage_error(tmp_path):
    proc = _smoke(str(tmp_path), env=_env(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2
    assert "is not a NeMo-RL checkout (no examples/run_dpo.py)" in proc.stderr
