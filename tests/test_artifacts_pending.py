"""Outputs of runs that end elsewhere: a NeMo-RL training run's checkpoint is registered pending
at launch and refused as an input until its run ended; a converter's output is registered when
it exits 0, with the training version it read as its input (`steps lineage`).

Real runs: `steps run` of a DPO step execs into a stand-in trainer (it writes a DCP checkpoint
as NeMo-RL's DTensor policy does, and while it runs asks steps for its own output), then
`steps run convert/dcp_to_hf --input checkpoint=ModelArtifact-fake_dpo:latest` runs a stand-in
of NeMo-RL's converter as a child. Cluster jobs: real run.json files whose job state changes as
`status` records it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_fixtures import REPO, clean_env, dpo_step, fake_checkout, only_run_dir, steps_run
from test_dcp_checkpoints import CONVERTER

from catalog.errors import StepsError
from runners.artifacts.names import parse_ref
from runners.artifacts.pending import settled
from runners.artifacts.registry import Output, Provenance, load, lookup, register
from runners.artifacts.resolve import resolve_inputs
from runners.digest import DigestMemo

# The stand-in trainer: while it runs, a dry run that takes its output by name is refused; then
# it saves step_N (N = FAKE_STEPS, else max_num_steps) as NeMo-RL's DTensor policy does.
TRAINER = f"""\
import json, os, subprocess, sys
import yaml
cfg = yaml.safe_load(open(sys.argv[sys.argv.index("--config") + 1]))
env = {{**os.environ, "PYTHONPATH": {str(REPO)!r}}}
probe = subprocess.run(
    [sys.executable, "-m", "steps", "run", "convert/dcp_to_hf", "-c", "tiny", "--dry-run",
     "--json", "--input", "checkpoint=ModelArtifact-fake_dpo:latest"],
    capture_output=True, text=True, env=env, cwd=os.environ["PROBE_CWD"])
json.dump({{"code": probe.returncode, "out": probe.stdout, "err": probe.stderr}},
          open(os.environ["PROBE_OUT"], "w"))
n = int(os.environ.get("FAKE_STEPS") or cfg["dpo"]["max_num_steps"])
step = os.path.join(cfg["checkpointing"]["checkpoint_dir"], f"step_{{n}}")
weights = os.path.join(step, "policy", "weights")
os.makedirs(weights)
for name in (".metadata", "__0_0.distcp"):
    open(os.path.join(weights, name), "wb").write(b"\\x80")
json.dump({{"total_steps": n, "epoch": 0, "step": n}},
          open(os.path.join(step, "training_info.json"), "w"))
open(os.path.join(step, "config.yaml"), "w").write(
    "policy:\\n  model_name: Qwen/Qwen3-0.6B\\n  tokenizer:\\n    name: Qwen/Qwen3-0.6B\\n")
"""


def _setup(tmp_path: Path, **extra: str) -> tuple[Path, Path, dict[str, str]]:
    catalog = tmp_path / "catalog"
    dpo_step(catalog)
    checkout = fake_checkout(tmp_path / "nemo-rl")
    (checkout / "examples" / "run_dpo.py").write_text(TRAINER, encoding="utf-8")
    converter = checkout / "examples" / "converters" / "convert_dcp_to_hf.py"
    converter.parent.mkdir(parents=True)
    converter.write_text(CONVERTER, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    env = clean_env(
        tmp_path,
        STEPS_RUNS_DIR=str(tmp_path / "runs"),
        PROBE_OUT=str(tmp_path / "probe.json"),
        PROBE_CWD=str(work),
        NEMO_RL_HOME=str(checkout),
        TORCH_CUDA_ARCH_LIST="9.0",  # the Megatron backend of the shipped DPO config needs it
        **extra,
    )
    return catalog, work, env


def _train(tmp_path: Path, catalog: Path, work: Path, env: dict[str, str]):
    data = catalog / "rl" / "fake_dpo" / "data"
    return steps_run(
        "rl/fake_dpo", "--catalog", str(catalog),
        f"checkpointing.checkpoint_dir={tmp_path / 'ckpt'}",
        f"data.train.data_path={data / 'train.jsonl'}",
        f"data.validation.data_path={data / 'val.jsonl'}",
        cwd=work, env=env,
    )  # fmt: skip


def _lineage(cli, target: str, work: Path, env: dict[str, str]) -> dict:
    proc = cli("lineage", target, "--json", cwd=work, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)["lineage"]


@pytest.mark.slow  # execs into the stand-in trainer, runs the converter as a child
def test_training_output_is_pending_until_its_run_ends_then_a_converter_registers_its_own(
    tmp_path, steps_in_process
):
    catalog, work, env = _setup(tmp_path)
    trained = _train(tmp_path, catalog, work, env)
    assert trained.returncode == 0, trained.stderr
    assert "registered ModelArtifact-fake_dpo:v0 pending" in trained.stderr

    probe = json.loads((tmp_path / "probe.json").read_text())  # asked while training ran
    assert probe["code"] == 2, probe
    [f] = json.loads(probe["out"])["findings"]
    assert f["code"] == "E-ARTIFACT-PENDING"
    assert (
        "ModelArtifact-fake_dpo:v0 is pending" in f["message"] and "has not ended" in f["message"]
    )

    out = tmp_path / "hf"
    latest = "checkpoint=ModelArtifact-fake_dpo:latest"
    conv = steps_in_process("run", "convert/dcp_to_hf", "-c", "tiny", f"hf_path={out}",
                            "--input", latest, cwd=work, env=env)  # fmt: skip
    assert conv.returncode == 0, conv.stdout + conv.stderr
    step = tmp_path / "ckpt" / "step_3"
    given = json.loads((out / "args.json").read_text())  # the converter read the settled step
    assert given["dcp_ckpt_path"] == str(step / "policy" / "weights")
    [reg] = json.loads(conv.stdout)["artifacts"]["registered"]
    assert (reg["artifact"], reg["type"], reg["path"]) == (
        "ModelArtifact-dcp_to_hf:v0", "hf_checkpoint", str(out))  # fmt: skip
    assert f"registered ModelArtifact-dcp_to_hf:v0 (hf_checkpoint, {reg['digest']}" in conv.stderr

    model = _lineage(steps_in_process, "ModelArtifact-fake_dpo", work, env)
    assert (model["state"], model["path"], model["artifact"]) == (
        "ready", str(step), "ModelArtifact-fake_dpo:v0")  # fmt: skip
    assert model["digest"].startswith("xxh3_128:") and model["files"] == 4

    hf = _lineage(steps_in_process, "ModelArtifact-dcp_to_hf:latest", work, env)
    made = hf["produced_by"]
    assert made["step"] == "convert/dcp_to_hf" and made["config_digest"].startswith("sha256:")
    assert made["run_dir"] == str(only_run_dir(tmp_path / "runs", "convert/dcp_to_hf"))
    [used] = hf["inputs"]
    assert (used["port"], used["artifact"], used["digest"], used["path"]) == (
        "checkpoint", "ModelArtifact-fake_dpo:v0", model["digest"], str(step))  # fmt: skip


@pytest.mark.slow  # execs into the stand-in trainer
def test_a_local_training_run_that_stops_before_its_end_leaves_a_failed_version(
    tmp_path, steps_in_process
):
    catalog, work, env = _setup(tmp_path, FAKE_STEPS="1")
    trained = _train(tmp_path, catalog, work, env)
    assert trained.returncode == 0, trained.stderr
    model = _lineage(steps_in_process, "ModelArtifact-fake_dpo:v0", work, env)
    assert model["state"] == "failed" and model["digest"] is None
    assert "ended at step_1 (1 of max_num_steps 3" in model["reason"]
    refused = steps_in_process("run", "convert/dcp_to_hf", "-c", "tiny", "--dry-run", "--json",
                               "--input", "checkpoint=ModelArtifact-fake_dpo",
                               cwd=work, env=env)  # fmt: skip
    assert refused.returncode == 2
    [f] = json.loads(refused.stdout)["findings"]
    assert f["code"] == "E-ARTIFACT-PENDING" and "ModelArtifact-fake_dpo:v0 failed:" in f["message"]


@pytest.mark.slow  # execs into the stand-in trainer
def test_a_converter_that_fails_registers_nothing_and_exits_with_its_code(
    tmp_path, steps_in_process
):
    catalog, work, env = _setup(tmp_path)
    ckpt = tmp_path / "ckpt"
    assert _train(tmp_path, catalog, work, env).returncode == 0
    converter = tmp_path / "nemo-rl" / "examples" / "converters" / "convert_dcp_to_hf.py"
    converter.write_text("import os, sys\nos.makedirs(sys.argv[-1])\nsys.exit(3)\n")
    out = tmp_path / "hf"
    proc = steps_in_process("run", "convert/dcp_to_hf", "-c", "tiny", f"dcp_path={ckpt}",
                            f"hf_path={out}", cwd=work, env=env)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "E-CONVERT-FAILED dcp_to_hf ended with exit code 3" in proc.stderr
    assert out.is_dir() and "ModelArtifact-dcp_to_hf" not in load(tmp_path / "runs").artifacts


def _job_run(root: Path, state: str | None, exit_code: int | None = None) -> Path:
    """A cluster run's run dir as `status` leaves it: run.json's job with its last state."""
    run_dir = root / "rl" / "nemo_rl" / "rlvr" / "20261126T000000Z-abcd1234"
    run_dir.mkdir(parents=True, exist_ok=True)
    job = {"executor": "slurm", "job_id": "4242", "state": state, "exit_code": exit_code}
    (run_dir / "run.json").write_text(json.dumps({"step": "rl/nemo_rl/rlvr", "version": "1",
                                                  "job": job}))  # fmt: skip
    return run_dir


def _resolve(root: Path, cwd: Path) -> str:
    types = {"checkpoint": "nemo_rl_checkpoint"}
    out, _ = resolve_inputs({"checkpoint": "ModelArtifact-rlvr:latest"}, types, root, cwd)
    return out["checkpoint"]


def test_a_cluster_jobs_output_settles_as_its_recorded_state_says(tmp_path):
    root, ckpt = tmp_path / "runs", tmp_path / "ckpt"
    run_dir = _job_run(root, "RUNNING")
    made = Provenance(step="rl/nemo_rl/rlvr", run_dir=str(run_dir))
    out = Output("ModelArtifact-rlvr", "nemo_rl_checkpoint", str(ckpt), "checkpoint")
    [pending] = register(root, [out], made, DigestMemo(tmp_path / "memo.json"), pending=True)
    assert (str(pending), pending.version.state, pending.version.digest) == (
        "ModelArtifact-rlvr:v0", "pending", None)  # fmt: skip
    with pytest.raises(StepsError) as refused:
        _resolve(root, tmp_path)
    assert refused.value.finding.code == "E-ARTIFACT-PENDING"
    assert f"steps status {run_dir}" in refused.value.finding.fix

    _job_run(root, "COMPLETED", 0)  # `status` saw it end; the checkpoint is on the cluster only
    assert _resolve(root, tmp_path) == str(ckpt)
    v = lookup(load(root), parse_ref("ModelArtifact-rlvr"), root)
    assert (v.state, v.digest) == ("ready", None) and "not visible on this machine" in v.reason

    [again] = register(root, [out], made, DigestMemo(tmp_path / "memo.json"), pending=True)
    _job_run(root, "TIMEOUT", 0)
    reg = settled(root, load(root))
    v1 = lookup(reg, parse_ref("ModelArtifact-rlvr:v1"), root)
    assert (str(again), v1.state, v1.reason) == (
        "ModelArtifact-rlvr:v1", "failed", "job 4242 ended TIMEOUT (exit code 0)")  # fmt: skip
    with pytest.raises(StepsError) as failed:
        _resolve(root, tmp_path)
    assert "name a ready version (ModelArtifact-rlvr:v0)" in failed.value.finding.fix


def test_a_chains_end_decision_settles_its_output(tmp_path):
    root, ckpt = tmp_path / "runs", tmp_path / "ckpt"
    weights = ckpt / "step_4" / "policy" / "weights"
    weights.mkdir(parents=True)
    for name in (".metadata", "__0_0.distcp"):
        (weights / name).write_bytes(b"\x80")
    (ckpt / "step_4" / "training_info.json").write_text('{"total_steps": 4}')
    (ckpt / "step_4" / "config.yaml").write_text("policy: {}\n")
    (ckpt / "tmp_step_6").mkdir()  # a save cut short: never the version
    run_dir = _job_run(root, "COMPLETED")
    data = json.loads((run_dir / "run.json").read_text())
    data["chain"] = {"state": "running", "checkpoint_dir": str(ckpt), "job_name": "c"}
    (run_dir / "run.json").write_text(json.dumps(data))
    made = Provenance(step="rl/nemo_rl/rlvr", run_dir=str(run_dir))
    out = Output("ModelArtifact-rlvr", "nemo_rl_checkpoint", str(ckpt), "checkpoint")
    register(root, [out], made, DigestMemo(tmp_path / "memo.json"), pending=True)
    with pytest.raises(StepsError):  # a segment ended, the chain goes on: still pending
        _resolve(root, tmp_path)
    data["chain"]["state"] = "done"
    (run_dir / "run.json").write_text(json.dumps(data))
    assert _resolve(root, tmp_path) == str(ckpt / "step_4")
    v = lookup(load(root), parse_ref("ModelArtifact-rlvr"), root)
    assert v.state == "ready" and v.digest.startswith("xxh3_128:") and v.files == 4


BRIDGE_WORKER = """\
import os, sys
out = sys.argv[sys.argv.index("--hf-path") + 1]
os.makedirs(out)
open(os.path.join(out, "config.json"), "w").write("{}")
open(os.path.join(out, "model.safetensors"), "wb").write(b"weights")
"""


@pytest.mark.slow  # runs Megatron-Bridge's stand-in worker as a child
def test_megatron_export_registers_its_hf_folder_and_lineage_shows_run_and_input(
    tmp_path, steps_in_process
):
    from test_run_convert import _bridge, _nemo_rl_run

    ckpt = _nemo_rl_run(tmp_path / "ckpt")
    bridge = _bridge(tmp_path / "mb")
    (bridge / "scripts" / "conversion" / "run_conversion.py").write_text(BRIDGE_WORKER)
    env = clean_env(tmp_path, STEPS_RUNS_DIR=str(tmp_path / "runs"))
    out = tmp_path / "hf"
    proc = steps_in_process("run", "convert/megatron_to_hf", "-c", "tiny",
                            f"megatron_path={ckpt}", f"megatron_bridge.root={bridge}",
                            f"hf_path={out}", cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [reg] = json.loads(proc.stdout)["artifacts"]["registered"]
    assert (reg["artifact"], reg["path"]) == ("ModelArtifact-megatron_to_hf:v0", str(out))

    shown = steps_in_process("lineage", "ModelArtifact-megatron_to_hf", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    run_dir = only_run_dir(tmp_path / "runs", "convert/megatron_to_hf")
    text = shown.stdout
    assert "ModelArtifact-megatron_to_hf:v0 (latest)  hf_checkpoint" in text
    assert f"  digest   {reg['digest']}" in text
    assert "  made by  convert/megatron_to_hf (port hf)" in text and f"  run dir  {run_dir}" in text
    assert f"    checkpoint: {ckpt}  megatron_checkpoint  xxh3_128:" in text
    assert "    reference: Qwen/Qwen3-0.6B  hf_checkpoint  (hub id)" in text
