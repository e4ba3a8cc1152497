"""Settings NeMo-RL's setup accepts that fail or train nothing once the loop runs on a GPU: a 0
it divides by (ZeroDivisionError: an error), GRPO train rows fewer than one step's prompts
(drop_last=True leaves no batch; the run ends having trained 0 steps: a warning)."""

from __future__ import annotations

from pathlib import Path

from run_fixtures import REPO, dry_run

CONFIGS = REPO / "steps" / "rl" / "nemo_rl"
RLVR_ROWS = CONFIGS / "rlvr" / "data" / "tiny_train.jsonl"


def _codes(out: dict, code: str) -> list[tuple[str, str]]:
    return [(f["key"], f["severity"]) for f in out["findings"] if f["code"] == code]


def _dpo(monkeypatch, capsys, tmp_path: Path, extra: str) -> dict:
    text = f"defaults: {CONFIGS / 'dpo' / 'config' / 'tiny.yaml'}\n{extra}"
    return dry_run(monkeypatch, capsys, tmp_path, "rl/nemo_rl/dpo", text)


def _grpo_rows(monkeypatch, capsys, tmp_path: Path, rows: int, extra: str = "") -> dict:
    lines = RLVR_ROWS.read_text(encoding="utf-8").splitlines()[:rows]
    data = tmp_path / "train.jsonl"
    data.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    text = (
        f"defaults: {CONFIGS / 'rlvr' / 'config' / 'tiny.yaml'}\n"
        f"data:\n  train:\n    data_path: {data}\n{extra}"
    )
    return dry_run(monkeypatch, capsys, tmp_path, "rl/nemo_rl/rlvr", text)


def test_save_period_zero_is_an_error(tmp_path, monkeypatch, capsys) -> None:
    out = _dpo(monkeypatch, capsys, tmp_path, "checkpointing:\n  save_period: 0\n")
    assert _codes(out, "E-ZERO-DIVISOR") == [("checkpointing.save_period", "error")]


def test_save_period_zero_on_a_one_step_run_never_divides(tmp_path, monkeypatch, capsys) -> None:
    text = "checkpointing:\n  save_period: 0\ndpo:\n  max_num_steps: 1\n"
    assert _codes(_dpo(monkeypatch, capsys, tmp_path, text), "E-ZERO-DIVISOR") == []


def test_sequence_padding_multiple_zero_is_an_error(tmp_path, monkeypatch, capsys) -> None:
    out = _dpo(monkeypatch, capsys, tmp_path, "policy:\n  make_sequence_length_divisible_by: 0\n")
    key = "policy.make_sequence_length_divisible_by"
    assert _codes(out, "E-ZERO-DIVISOR") == [(key, "error")]


def test_grpo_rows_fewer_than_one_step_are_an_error(tmp_path, monkeypatch, capsys) -> None:
    out = _grpo_rows(monkeypatch, capsys, tmp_path, rows=3)  # tiny draws 4 prompts a step
    assert _codes(out, "E-ZERO-STEPS") == [("grpo.num_prompts_per_step", "error")]
    message = next(f["message"] for f in out["findings"] if f["code"] == "E-ZERO-STEPS")
    assert "has 3 rows but each step draws 4 prompts" in message


def test_grpo_rows_filling_one_step_pass(tmp_path, monkeypatch, capsys) -> None:
    assert _codes(_grpo_rows(monkeypatch, capsys, tmp_path, rows=4), "E-ZERO-STEPS") == []


def test_dpo_pairs_fewer_than_one_global_batch_are_an_error(tmp_path, monkeypatch, capsys) -> None:
    """NeMo-RL's DPO loader: batch_size=policy.train_global_batch_size, drop_last=True."""
    out = _dpo(monkeypatch, capsys, tmp_path, "policy:\n  train_global_batch_size: 1024\n")
    assert _codes(out, "E-ZERO-STEPS") == [("policy.train_global_batch_size", "error")]
    message = next(f["message"] for f in out["findings"] if f["code"] == "E-ZERO-STEPS")
    assert "each step draws 1024 pairs" in message and "dpo.py:" in message
    assert _codes(_dpo(monkeypatch, capsys, tmp_path, ""), "E-ZERO-STEPS") == []
