"""A NeMo-RL checkpoint says which backend wrote it: torch DCP (DTensor) goes through NeMo-RL's
own converter, Megatron iter_* through Megatron-Bridge, and neither is mistaken for the other."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from nemo_rl_trees import nemo_rl_tree, write
from test_contracts_checkpoints import nemo_rl_step

from catalog.contracts import validate_artifact
from steps.cli import main

ROOT = Path(__file__).resolve().parents[1]
# The argument parser of NeMo-RL's examples/converters/convert_dcp_to_hf.py (v0.6.0, v0.7.0 and
# the pin): exactly these three options, parse_args() refuses any other; the stand-in records
# what it was given instead of converting.
CONVERTER = """\
import argparse, json, os, sys
p = argparse.ArgumentParser()
p.add_argument("--config", type=str, default=None)
p.add_argument("--dcp-ckpt-path", type=str, default=None)
p.add_argument("--hf-ckpt-path", type=str, default=None)
a = p.parse_args()
os.makedirs(a.hf_ckpt_path)
json.dump(vars(a) | {"cwd": os.getcwd()}, open(os.path.join(a.hf_ckpt_path, "args.json"), "w"))
"""


def dcp_step(root: Path, n: int, v2: bool = False, model: str = "Qwen/Qwen3-0.6B") -> Path:
    """step_N as NeMo-RL v0.7.0's DTensor policy wrote it on the GPU (research notes)."""
    step = root / f"step_{n}"
    weights = step / "policy" / "weights" / ("model" if v2 else "")
    for folder in (weights, step / "policy" / "optimizer"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".metadata").write_bytes(b"\x80")
        (folder / "__0_0.distcp").write_bytes(b"\x80")
    write(step / "policy" / "tokenizer" / "tokenizer.json", "{}")
    write(step / "training_info.json", json.dumps({"step": n}))
    write(
        step / "config.yaml", f"policy:\n  model_name: {model}\n  tokenizer:\n    name: {model}\n"
    )
    return step


def _report(type_name: str, path: Path) -> tuple[bool, str]:
    report = validate_artifact(type_name, path)
    text = " | ".join(f"{f.message} Fix: {f.fix}" for f in report.findings)
    return report.ok, text or (report.note or "")


@pytest.mark.parametrize("v2", [False, True], ids=["weights", "weights-model"])
def test_a_dtensor_checkpoint_is_dcp_and_nothing_megatron(tmp_path: Path, v2: bool) -> None:
    dcp_step(tmp_path, 1, v2)
    dcp_step(tmp_path, 3, v2)
    assert _report("nemo_rl_dcp_checkpoint", tmp_path) == (True, "step step_3, DTensor (torch DCP)")
    assert _report("nemo_rl_checkpoint", tmp_path) == (True, "step step_3, DTensor (torch DCP)")
    ok, why = _report("nemo_rl_megatron_checkpoint", tmp_path)
    assert not ok and "is a DTensor (torch DCP) checkpoint, not Megatron" in why
    assert "validate it as nemo_rl_dcp_checkpoint and export it with convert/dcp_to_hf" in why
    ok, why = _report("megatron_checkpoint", tmp_path)
    assert not ok and "a torch DCP checkpoint" in why and "convert/dcp_to_hf" in why


def test_a_megatron_checkpoint_is_refused_as_dcp_with_its_reason(tmp_path: Path) -> None:
    nemo_rl_step(tmp_path, 2)
    assert _report("nemo_rl_megatron_checkpoint", tmp_path)[0]
    assert _report("nemo_rl_checkpoint", tmp_path) == (
        True,
        "step step_2, Megatron (iter_* torch_dist)",
    )
    ok, why = _report("nemo_rl_dcp_checkpoint", tmp_path)
    assert not ok and "is a Megatron (iter_* torch_dist) checkpoint, not DTensor" in why
    assert "export it with convert/megatron_to_hf" in why


def test_weights_of_neither_layout_are_named(tmp_path: Path) -> None:
    step = dcp_step(tmp_path, 1)
    (step / "policy" / "weights" / "__0_0.distcp").unlink()  # .metadata alone: no shards
    ok, why = _report("nemo_rl_checkpoint", tmp_path)
    assert not ok and "neither Megatron iter_* folders nor a torch DCP checkpoint" in why


def _pipeline(tmp_path: Path, dpo_config: str) -> Path:
    steps = ROOT / "steps"
    return write(
        tmp_path / "p.yaml",
        f"""name: p
inputs:
  pairs: {{type: preference_jsonl, path: {steps}/rl/nemo_rl/dpo/data/tiny_train.jsonl}}
  policy: {{type: hf_checkpoint, path: Qwen/Qwen3-0.6B}}
stages:
  - id: dpo
    step: rl/nemo_rl/dpo
    config: {dpo_config}
    inputs: {{train: inputs.pairs, validation: inputs.pairs, policy: inputs.policy}}
targets:
  - {{output: dpo.checkpoint, type: hf_checkpoint}}
""",
    )


@pytest.mark.parametrize(
    ("config", "produced", "converter"),
    [
        ("tiny", "nemo_rl_megatron_checkpoint", "convert/megatron_to_hf"),
        ("tiny_dtensor", "nemo_rl_dcp_checkpoint", "convert/dcp_to_hf"),
    ],
)
def test_the_planner_routes_each_backend_to_its_own_converter(
    tmp_path: Path, capsys: pytest.CaptureFixture, config: str, produced: str, converter: str
) -> None:
    assert main(["plan", str(_pipeline(tmp_path, config)), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    stages = {s["id"]: s for s in plan["stages"]}
    assert stages["dpo__to_hf_checkpoint"]["step"] == converter
    assert stages["dpo"]["outputs"]["checkpoint"]["type"] == produced


def test_dcp_export_runs_nemo_rls_converter_on_the_latest_step(tmp_path: Path) -> None:
    rl = nemo_rl_tree(tmp_path / "RL", "0.7.0", script="examples/converters/convert_dcp_to_hf.py")
    write(rl / "examples/converters/convert_dcp_to_hf.py", CONVERTER)
    ckpt = tmp_path / "checkpoints"
    dcp_step(ckpt, 1)
    step = dcp_step(ckpt, 3)
    out = tmp_path / "hf"
    argv = ["run", "convert/dcp_to_hf", "-c", "tiny", "--nemo-rl", str(rl)]
    argv += ["--runs-dir", str(tmp_path / "runs"), f"dcp_path={ckpt}", f"hf_path={out}"]
    env = {"PATH": "/usr/bin:/bin", "STEPS_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "steps", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    given = json.loads((out / "args.json").read_text())
    assert given == {
        "config": str(step / "config.yaml"),
        "dcp_ckpt_path": str(step / "policy" / "weights"),
        "hf_ckpt_path": str(out),
        "cwd": str(rl.resolve()),
    }


def test_dcp_export_is_checked_before_launch(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rl = nemo_rl_tree(tmp_path / "RL", "0.7.0", script="examples/converters/convert_dcp_to_hf.py")
    ckpt = tmp_path / "checkpoints"
    dcp_step(ckpt, 2, model=str(tmp_path / "base-model"))  # a local base model, gone
    out = tmp_path / "hf"
    out.mkdir()  # a failed export's leftovers
    nemo_rl_step(tmp_path / "megatron", 4)
    argv = ["run", "convert/dcp_to_hf", "--nemo-rl", str(rl), "--runs-dir", str(tmp_path / "r")]
    assert main([*argv, f"dcp_path={ckpt}", f"hf_path={out}", "--dry-run"]) == 1
    shown = capsys.readouterr().out  # a dry run prints its findings with the plan
    assert shown.count("E-DCP-EXPORT") == 2
    assert "base-model', a folder that does not exist here" in shown
    assert "refuses an existing" in shown
    assert main([*argv, f"dcp_path={tmp_path / 'megatron'}", "hf_path=new", "--dry-run"]) == 1
    assert "is a Megatron (iter_* torch_dist) checkpoint" in capsys.readouterr().out
