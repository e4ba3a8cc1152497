"""logger.log_dir and checkpointing.checkpoint_dir that are, or lie under, a regular file: NeMo-RL
cannot create them (NotADirectoryError at logger.py:1616 before setup; the first checkpoint save
at checkpoint.py:219, v0.7.0)."""

from __future__ import annotations

from pathlib import Path

from run_fixtures import REPO, dry_run

TINY = REPO / "steps" / "rl" / "nemo_rl" / "dpo" / "config" / "tiny.yaml"


def _findings(monkeypatch, capsys, tmp_path: Path, extra: str) -> list[dict]:
    out = dry_run(monkeypatch, capsys, tmp_path, "rl/nemo_rl/dpo", f"defaults: {TINY}\n{extra}")
    return [f for f in out["findings"] if f["code"] == "E-OUTPUT-UNDER-FILE"]


def test_log_dir_under_a_file_is_an_error_naming_the_file(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "logs").write_text("not a folder\n")
    found = _findings(monkeypatch, capsys, tmp_path, f"logger:\n  log_dir: {tmp_path}/logs/x\n")
    assert [f["key"] for f in found] == ["logger.log_dir"]
    assert f"is under the file {tmp_path / 'logs'}" in found[0]["message"]
    assert found[0]["path"] == str(tmp_path / "cfg.yaml") and found[0]["line"] == 3


def test_checkpoint_dir_that_is_a_file_is_an_error(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "ckpt").write_text("")
    text = f"checkpointing:\n  enabled: true\n  checkpoint_dir: {tmp_path}/ckpt\n"
    found = _findings(monkeypatch, capsys, tmp_path, text)
    assert [f["key"] for f in found] == ["checkpointing.checkpoint_dir"]
    assert "is a file" in found[0]["message"]


def test_checkpoint_dir_under_a_file_with_checkpointing_off_is_not_judged(
    tmp_path, monkeypatch, capsys
) -> None:
    (tmp_path / "ckpt").write_text("")
    text = f"checkpointing:\n  enabled: false\n  checkpoint_dir: {tmp_path}/ckpt/run\n"
    assert _findings(monkeypatch, capsys, tmp_path, text) == []


def test_new_and_existing_folders_pass(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "logs").mkdir()
    text = f"logger:\n  log_dir: {tmp_path}/logs/new/deeper\n"
    assert _findings(monkeypatch, capsys, tmp_path, text) == []


def test_relative_log_dir_is_judged_from_the_checkout(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "nemo-rl").mkdir()
    (tmp_path / "nemo-rl" / "logs").write_text("")
    found = _findings(monkeypatch, capsys, tmp_path, "logger:\n  log_dir: logs/dpo\n")
    assert [f["key"] for f in found] == ["logger.log_dir"]
    assert str(tmp_path / "nemo-rl" / "logs" / "dpo") in found[0]["message"]
