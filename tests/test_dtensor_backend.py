"""A DTensor policy needs its own optimizer and scheduler sections; tiny_dtensor has them."""

from __future__ import annotations

from pathlib import Path

import pytest
from preflight_fixtures import context_for, dpo_config, run_rules

from catalog.upstream import NEMO_RL_STEP_RELEASES
from runners.preflight import preflight
from steps.cli import main

ROOT = Path(__file__).resolve().parents[1]
STEPS = ROOT / "steps" / "rl" / "nemo_rl"
SUPPORTED = [*NEMO_RL_STEP_RELEASES, "pin"]  # the versions our steps' configs run on
ADAMW = {"name": "torch.optim.AdamW", "kwargs": {"lr": 1e-6}}
LINEAR = {"name": "torch.optim.lr_scheduler.LinearLR", "kwargs": {"total_iters": 1}}
CONSTANT = {"name": "torch.optim.lr_scheduler.ConstantLR", "kwargs": {"factor": 1.0}}


def _dtensor(tmp_path: Path, **policy: object) -> dict:
    cfg = dpo_config(tmp_path)
    cfg["policy"]["megatron_cfg"]["enabled"] = False
    cfg["policy"]["dtensor_cfg"] = {
        "enabled": True,
        "tensor_parallel_size": 1,
        "context_parallel_size": 1,
        "sequence_parallel": False,
        "activation_checkpointing": False,
        "cpu_offload": False,
        "custom_parallel_plan": None,
    }
    cfg["policy"].update(policy)
    return cfg


def _backend(cfg: dict) -> list[tuple[str, str]]:
    found = run_rules(cfg, "dpo")
    return [(f.key, f.message) for f in found if f.code == "E-BACKEND-SECTION"]


def test_dtensor_with_nulled_megatron_era_sections_is_refused(tmp_path: Path) -> None:
    found = _backend(_dtensor(tmp_path, optimizer=None, scheduler=None))
    assert [key for key, _ in found] == ["policy.optimizer", "policy.scheduler"]
    assert found[0][1].startswith("policy.optimizer: is null, but the DTensor policy builds")


@pytest.mark.parametrize(
    ("scheduler", "why"),
    [
        ([LINEAR, CONSTANT], "without its {milestones: [...]} item"),
        ([LINEAR, CONSTANT, {"milestones": [1, 2]}], "needs 1 milestone(s) for its 2 schedulers"),
        ([LINEAR, "ConstantLR", {"milestones": [1]}], "neither {name, kwargs} nor"),
        ("LinearLR", "is a str"),
    ],
)
def test_a_scheduler_list_must_have_the_shape_sequential_lr_takes(
    tmp_path: Path, scheduler: object, why: str
) -> None:
    found = _backend(_dtensor(tmp_path, optimizer=ADAMW, scheduler=scheduler))
    assert len(found) == 1 and found[0][0] == "policy.scheduler" and why in found[0][1]


@pytest.mark.parametrize(
    "policy",
    [
        {"optimizer": ADAMW},  # no scheduler key: NeMo-RL falls back to a constant LR
        {"optimizer": ADAMW, "scheduler": LINEAR},  # one {name, kwargs} scheduler
        {"optimizer": ADAMW, "scheduler": [LINEAR, CONSTANT, {"milestones": [1]}]},
    ],
)
def test_usable_dtensor_sections_pass(tmp_path: Path, policy: dict) -> None:
    cfg = _dtensor(tmp_path, **policy)
    if "scheduler" not in policy:
        cfg["policy"].pop("scheduler", None)
    assert _backend(cfg) == []


def test_megatron_runs_ignore_the_torch_sections(tmp_path: Path) -> None:
    cfg = dpo_config(tmp_path)
    cfg["policy"].update(optimizer=None, scheduler=None)
    assert _backend(cfg) == []


@pytest.mark.parametrize("version", SUPPORTED)
@pytest.mark.parametrize("step", ["dpo", "rlvr"])
def test_tiny_dtensor_is_a_clean_dtensor_config_on_every_version(step: str, version: str) -> None:
    config = STEPS / step / "config" / "tiny_dtensor.yaml"
    ctx = context_for(config, STEPS / step, version)
    policy = ctx.config["policy"]
    assert policy["dtensor_cfg"]["enabled"] and not policy["megatron_cfg"]["enabled"]
    assert [f.render() for f in preflight(ctx) if f.is_error or f.code.startswith("W-")] == []


def test_tiny_dtensor_dry_run_and_check_are_clean(tmp_path: Path) -> None:
    argv = ["run", "rl/nemo_rl/dpo", "-c", "tiny_dtensor", "--dry-run"]
    assert main([*argv, "--runs-dir", str(tmp_path / "runs")]) == 0
    assert main(["check"]) == 0
