"""A launch on this machine asking for more GPUs than it shows: NeMo-RL retries placement for
about 100 s, then fails (ResourceInsufficientError, virtual_cluster.py:766 v0.7.0). Counted
without torch: CUDA_VISIBLE_DEVICES, else `nvidia-smi -L`."""

from __future__ import annotations

from pathlib import Path

from run_fixtures import REPO, clean_env, dry_run

TINY = REPO / "steps" / "rl" / "nemo_rl" / "dpo" / "config" / "tiny.yaml"
CONFIG = f"defaults: {TINY}\ncluster:\n  gpus_per_node: 2\n  num_nodes: 1\n"


def _env(tmp_path: Path, smi_gpus: int | None = None, **extra: str) -> dict[str, str]:
    """A launch environment whose PATH holds only an `nvidia-smi` listing `smi_gpus` GPUs (or
    none), with no Ray cluster to attach to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if smi_gpus is not None:
        smi = bin_dir / "nvidia-smi"
        lines = "".join(f"echo 'GPU {i}: NVIDIA H100 (UUID: GPU-{i})'\n" for i in range(smi_gpus))
        smi.write_text("#!/bin/sh\n" + lines)
        smi.chmod(0o755)
    env = clean_env(tmp_path, PATH=str(bin_dir), RAY_TMPDIR=str(tmp_path), **extra)
    for name in ("CUDA_VISIBLE_DEVICES", "RAY_ADDRESS"):
        if name not in extra:
            env.pop(name, None)
    return env


def _gpu_findings(monkeypatch, capsys, tmp_path: Path, env: dict[str, str]) -> list[tuple]:
    out = dry_run(monkeypatch, capsys, tmp_path, "rl/nemo_rl/dpo", CONFIG, env=env)
    return [(f["code"], f["severity"]) for f in out["findings"] if "LOCAL-GPUS" in f["code"]]


def test_fewer_visible_devices_than_asked_is_an_error(tmp_path, monkeypatch, capsys) -> None:
    env = _env(tmp_path, CUDA_VISIBLE_DEVICES="0")
    assert _gpu_findings(monkeypatch, capsys, tmp_path, env) == [("E-LOCAL-GPUS", "error")]


def test_nvidia_smi_counts_when_no_devices_are_named(tmp_path, monkeypatch, capsys) -> None:
    env = _env(tmp_path, smi_gpus=1)
    out = dry_run(monkeypatch, capsys, tmp_path, "rl/nemo_rl/dpo", CONFIG, env=env)
    found = [f for f in out["findings"] if f["code"] == "E-LOCAL-GPUS"]
    assert len(found) == 1 and "this machine shows 1" in found[0]["message"]
    assert "cluster.gpus_per_node=1" in found[0]["fix"]


def test_no_gpu_at_all_is_only_a_warning(tmp_path, monkeypatch, capsys) -> None:
    env = _env(tmp_path)  # no nvidia-smi, no CUDA_VISIBLE_DEVICES: a laptop
    assert _gpu_findings(monkeypatch, capsys, tmp_path, env) == [("W-LOCAL-GPUS", "warning")]


def test_enough_gpus_pass(tmp_path, monkeypatch, capsys) -> None:
    env = _env(tmp_path, smi_gpus=8, CUDA_VISIBLE_DEVICES="3,5")
    assert _gpu_findings(monkeypatch, capsys, tmp_path, env) == []


def test_a_ray_cluster_to_attach_to_is_not_judged(tmp_path, monkeypatch, capsys) -> None:
    env = _env(tmp_path, CUDA_VISIBLE_DEVICES="0", RAY_ADDRESS="10.0.0.1:6379")
    assert _gpu_findings(monkeypatch, capsys, tmp_path, env) == []
