"""The `megatron_to_hf` runner: export a Megatron checkpoint to Hugging Face with Megatron-Bridge.

Runs Megatron-Bridge's `scripts/conversion/run_conversion.py export` from its root: one CPU
process, or under torchrun on GPUs when `distributed.enabled`. Both converters run locally as a
child (`run_to_end`), not an exec: their output is registered only once it exits 0.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from catalog.errors import Finding, StepsError, cannot_start


def latest_iteration(path: Path) -> Path | None:
    """The iter_* folder to export, per the Megatron checkpoint contract."""
    from catalog.contracts.checkpoints import check_megatron

    return check_megatron(path).resolved if path.is_dir() else None


def plan(
    config: Mapping[str, Any], force: bool
) -> tuple[list[str] | None, Path | None, list[Finding], str | None]:
    """(argv, cwd, findings, skip message) for the export described by a resolved config."""
    findings: list[Finding] = []
    hf_path = Path(str(config.get("hf_path")))
    if not force and (hf_path / "config.json").is_file():
        skip = "conversion skipped (pass --force to redo it into an empty folder)"
        return None, None, findings, f"{hf_path} already holds config.json: {skip}"
    src = Path(str(config.get("megatron_path")))
    it = latest_iteration(src)  # when None, artifact_contracts reports E-MEGATRON-CHECKPOINT
    mb = config.get("megatron_bridge") or {}
    root = Path(str(mb.get("root", "/opt/Megatron-Bridge")))
    script = str(mb.get("script", "scripts/conversion/run_conversion.py"))
    if not (root / script).is_file():
        findings.append(
            Finding(
                "E-MEGATRON-BRIDGE-NOT-FOUND",
                f"Megatron-Bridge's {script} is not under {root}",
                key="megatron_bridge.root",
                fix="set megatron_bridge.root=DIR (or $MEGATRON_BRIDGE_HOME) to a Megatron-Bridge "
                "checkout, or run inside the NeMo-RL container",
            )
        )
    return build_command(config, it or src, script), root, findings, None


def build_command(config: Mapping[str, Any], iteration: Path, script: str) -> list[str]:
    """The worker argv, under torchrun on GPUs when `distributed.enabled`."""
    dist = config.get("distributed") or {}
    par = config.get("parallel") or {}
    gpu = bool(dist.get("enabled"))
    args = [script, "export", "--device", "gpu" if gpu else "cpu"]
    args += ["--hf-model", str(config.get("hf_model_id")), "--megatron-path", str(iteration)]
    args += ["--hf-path", str(config.get("hf_path"))]
    args += ["--torch-dtype", str(config.get("torch_dtype", "bfloat16"))]
    for k in ("tp", "pp", "ep", "etp"):
        args += [f"--{k}", str(int(par.get(k, 1)))]
    if config.get("trust_remote_code"):
        args.append("--trust-remote-code")
    if not config.get("show_progress", True):
        args.append("--no-progress")
    if not config.get("strict", True):
        args.append("--not-strict")
    if gpu:
        return ["torchrun", "--nproc_per_node", str(int(dist.get("nproc_per_node", 1))), *args]
    return [sys.executable, *args]


def require_bridge(findings: list[Finding]) -> None:
    """Exit 2 with the fix when Megatron-Bridge is missing (after preflight has printed)."""
    f = next((f for f in findings if f.code == "E-MEGATRON-BRIDGE-NOT-FOUND"), None)
    if f is not None:
        raise StepsError(f.code, f.message, key=f.key, fix=f.fix, exit_code=2)


def run_to_end(argv: list[str], cwd: Path, env: Mapping[str, str], what: str) -> dict:
    """Run a converter as a child; an exit code not 0 is this run's (E-CONVERT-FAILED)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        code = subprocess.run(argv, cwd=cwd, env=dict(env), check=False).returncode
    except OSError as exc:
        raise cannot_start(argv[0], cwd, exc) from None
    if code != 0:
        shown = f"signal {-code}" if code < 0 else f"exit code {code}"
        raise StepsError(
            "E-CONVERT-FAILED",
            f"{what} ended with {shown}: its output is not registered",
            fix="read its messages above; remove the half-written output folder, fix the cause "
            "and run again",
            exit_code=128 - code if code < 0 else code,
        )
    return {"converter": what, "exit_code": 0, "argv": argv}
