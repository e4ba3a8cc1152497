"""What NeMo-RL resumes from checkpointing.checkpoint_dir: the highest step_N by number, whose
training_info.json must load into the running algorithm's save state (issue 38 items 1-2)."""

from __future__ import annotations

import pytest
from user_configs import DPO_STATE, GRPO_STATE, checkpoint, cli_dry_run, judged, on

KEY = "checkpointing.checkpoint_dir"


def _config(ckpt) -> str:
    return f"checkpointing:\n  checkpoint_dir: {ckpt}\n"


def test_dpo_on_a_grpo_checkpoint_dir_is_the_typeerror_of_v0_7_0_at_the_key(tmp_path) -> None:
    ckpt = tmp_path / "shared-ckpt"
    checkpoint(ckpt / "step_3", GRPO_STATE)
    found = judged(tmp_path, "dpo", _config(ckpt), "0.7.0")
    [error] = on(found, "E-RESUME-STATE")
    assert error.key == KEY and error.path == str(tmp_path / "cfg.yaml") and error.line == 3
    assert "a GRPO run's checkpoint" in error.message and "epoch, step" in error.message
    assert "TypeError building DPOSaveState at nemo_rl/algorithms/dpo.py:185" in error.message
    assert on(found, "W-RESUME-CHECKPOINT") == []  # one cause, one finding


@pytest.mark.parametrize(
    ("version", "where"),
    [("0.5.0", "grpo.py:1023"), ("0.6.0", "grpo.py:1350"), ("0.7.0", "grpo.py:2168")],
)
def test_grpo_on_a_dpo_checkpoint_is_a_keyerror_when_training_starts(
    tmp_path, version, where
) -> None:
    ckpt = tmp_path / "ckpt"
    checkpoint(ckpt / "step_5", DPO_STATE)
    [error] = on(judged(tmp_path, "rlvr", _config(ckpt), version), "E-RESUME-STATE")
    assert "a DPO run's checkpoint" in error.message
    assert f"KeyError at nemo_rl/algorithms/{where}" in error.message


def test_at_the_pin_another_algorithms_checkpoint_loads_with_defaults_so_it_warns(
    tmp_path,
) -> None:
    ckpt = tmp_path / "ckpt"
    checkpoint(ckpt / "step_3", GRPO_STATE)
    found = judged(tmp_path, "dpo", _config(ckpt), "pin")
    assert [f.code for f in found if f.is_error] == []
    [warned] = on(found, "W-RESUME-STATE")
    assert "starts them at 0" in warned.message and "dpo.py:63-74" in warned.message


def test_dpo_resuming_its_own_checkpoint_only_says_where_it_resumes(tmp_path) -> None:
    ckpt = tmp_path / "ckpt"
    checkpoint(ckpt / "step_2", DPO_STATE)
    checkpoint(ckpt / "step_10", DPO_STATE | {"val:validation-default_loss": 0.5})
    found = judged(tmp_path, "dpo", _config(ckpt), "0.7.0")
    assert [f.code for f in found if f.code.startswith(("E-RESUME", "W-RESUME"))] == [
        "W-RESUME-CHECKPOINT"
    ]
    assert "resumes from step_10" in on(found, "W-RESUME-CHECKPOINT")[0].message


@pytest.mark.parametrize("version", ["0.4.0", "0.6.0", "0.7.0", "pin"])
def test_the_highest_step_without_training_info_is_not_skipped(tmp_path, version) -> None:
    ckpt = tmp_path / "ckpt"
    checkpoint(ckpt / "step_9", DPO_STATE)
    checkpoint(ckpt / "step_10", None)  # numbered above step_9 though it sorts below as text
    [error] = on(judged(tmp_path, "dpo", _config(ckpt), version), "E-RESUME-INFO")
    assert str(ckpt / "step_10") in error.message and "has no training_info.json" in error.message
    line = {"0.4.0": 287, "0.6.0": 348, "0.7.0": 389, "pin": 586}[version]
    assert f"nemo_rl/utils/checkpoint.py:{line}" in error.message


def test_an_unfinished_tmp_step_is_not_what_nemo_rl_resumes_from(tmp_path) -> None:
    ckpt = tmp_path / "ckpt"
    checkpoint(ckpt / "step_4", DPO_STATE)
    checkpoint(ckpt / "tmp_step_6", None)
    found = judged(tmp_path, "dpo", _config(ckpt), "0.7.0")
    assert on(found, "E-RESUME-INFO") == []
    assert "resumes from step_4" in on(found, "W-RESUME-CHECKPOINT")[0].message


def test_training_info_that_is_not_json_is_an_error(tmp_path) -> None:
    ckpt = tmp_path / "ckpt"
    checkpoint(ckpt / "step_1", None)
    (ckpt / "step_1" / "training_info.json").write_text('{"epoch": 0,', encoding="utf-8")
    [error] = on(judged(tmp_path, "dpo", _config(ckpt), "0.7.0"), "E-RESUME-INFO")
    assert "cannot be loaded" in error.message


def test_dry_run_of_dpo_on_grpo_checkpoints_exits_1_with_the_finding(
    tmp_path, monkeypatch, capsys
) -> None:
    ckpt = tmp_path / "shared-ckpt"
    checkpoint(ckpt / "step_3", GRPO_STATE)
    code, out = cli_dry_run(monkeypatch, capsys, tmp_path, "dpo", _config(ckpt), "0.7.0")
    assert code == 1
    assert [f["code"] for f in out["findings"] if f.get("key") == KEY] == ["E-RESUME-STATE"]
