"""What real NeMo-RL v0.7.0 refused on CPU before the GPU and preflight let through (the oracle's
misses), and what it accepts that preflight refused (issue 29)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from preflight_fixtures import codes, dpo_config, error_codes, grpo_config, run_rules

from catalog.nemo_rl_version import parse_version
from runners.launch.local import Launcher, LocalLaunch

V070 = parse_version("0.7.0")


def _launch(tmp_path: Path, **env: str) -> LocalLaunch:
    """A launch here whose job environment is exactly `env` (plus a HOME of its own)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return LocalLaunch(
        Launcher((sys.executable,), "--launcher"), tmp_path, {"HOME": str(home), **env}
    )


def test_tokenizer_folder_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["tokenizer"] = {"name": str(tmp_path / "models" / "tok")}
    found = [f for f in run_rules(cfg, nemo_rl_version=V070) if f.code == "E-TOKENIZER-PATH"]
    assert [f.key for f in found] == ["policy.tokenizer.name"]
    (tmp_path / "models" / "tok").mkdir(parents=True)
    assert "E-TOKENIZER-PATH" not in codes(run_rules(cfg, nemo_rl_version=V070))


def test_a_hub_id_tokenizer_is_not_a_path(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["tokenizer"] = {"name": "Qwen/Qwen2.5-0.5B"}
    assert "E-TOKENIZER-PATH" not in codes(run_rules(cfg, nemo_rl_version=V070))


def test_mlflow_enabled_without_its_section_is_refused(tmp_path: Path) -> None:
    cfg = dpo_config(tmp_path)
    cfg["logger"]["mlflow_enabled"] = True
    cfg["logger"].pop("mlflow", None)
    found = [f for f in run_rules(cfg, "dpo", nemo_rl_version=V070) if f.code == "E-LOGGER-SECTION"]
    assert [f.key for f in found] == ["logger.mlflow"] and "logger.py:987" in found[0].message


@pytest.mark.parametrize(
    ("env", "netrc", "refused"),
    [
        ({}, False, True),
        ({"WANDB_API_KEY": "k" * 40}, False, False),
        ({"WANDB_MODE": "offline"}, False, False),
        ({}, True, False),
    ],
)
def test_wandb_online_needs_a_key_where_the_job_runs(
    tmp_path: Path, env: dict, netrc: bool, refused: bool
) -> None:
    cfg = dpo_config(tmp_path)
    cfg["logger"].update(wandb_enabled=True, wandb={"project": "p", "name": "n"})
    launch = _launch(tmp_path, **env)
    if netrc:
        rc = Path(launch.env["HOME"]) / ".netrc"
        rc.write_text("machine api.wandb.ai\n  login user\n  password " + "k" * 40 + "\n")
        rc.chmod(0o600)
    found = run_rules(cfg, "dpo", nemo_rl_version=V070, local_launch=launch)
    assert ("E-WANDB-KEY" in error_codes(found)) == refused
    assert all("k" * 40 not in f.render() for f in found)


def test_dpo_without_validation_data_is_a_warning_grpo_an_error(tmp_path: Path) -> None:
    dpo = dpo_config(tmp_path)
    dpo["data"]["validation"] = None
    found = run_rules(dpo, "dpo", nemo_rl_version=V070)
    assert "E-VALIDATION-SETTINGS" not in error_codes(found)
    warned = [f for f in found if f.code == "W-VALIDATION-SETTINGS"]
    assert len(warned) == 1 and "dpo.py:694-700" in warned[0].message
    grpo = grpo_config(tmp_path)
    grpo["data"]["validation"] = None
    assert "E-VALIDATION-SETTINGS" in error_codes(run_rules(grpo, nemo_rl_version=V070))


@pytest.mark.parametrize(
    ("env", "megatron", "refused"),
    [
        ({}, True, True),
        ({"TORCH_CUDA_ARCH_LIST": "9.0"}, True, False),
        ({}, False, False),
    ],
)
def test_megatron_launched_here_needs_torch_cuda_arch_list(
    tmp_path: Path, env: dict, megatron: bool, refused: bool
) -> None:
    cfg = dpo_config(tmp_path)
    cfg["policy"]["megatron_cfg"]["enabled"] = megatron
    cfg["policy"]["dtensor_cfg"]["enabled"] = not megatron
    found = run_rules(cfg, "dpo", nemo_rl_version=V070, local_launch=_launch(tmp_path, **env))
    assert ("E-MEGATRON-ARCH-LIST" in error_codes(found)) == refused
    assert "E-MEGATRON-ARCH-LIST" not in codes(run_rules(cfg, "dpo", nemo_rl_version=V070))
