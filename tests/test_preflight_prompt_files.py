"""Prompt files NeMo-RL opens when it sets up data (issue 38 item 7): a missing one is its
FileNotFoundError before launch, relative paths judged from the checkout as NeMo-RL opens them."""

from __future__ import annotations

from pathlib import Path

from preflight_fixtures import grpo_config, run_rules
from user_configs import cli_dry_run, judged, on

from catalog.nemo_rl_version import parse_version


def test_a_missing_system_prompt_file_is_the_filenotfounderror_at_its_key(tmp_path) -> None:
    missing = tmp_path / "prompts" / "sytem.txt"
    text = f"data:\n  train:\n    system_prompt_file: {missing}\n"
    [error] = on(judged(tmp_path, "dpo", text, "0.7.0"), "E-PROMPT-FILE")
    assert error.key == "data.train.system_prompt_file" and error.line == 4
    assert str(missing) in error.message and "nemo_rl/data/interfaces.py:74" in error.message


def test_an_existing_prompt_file_is_clean(tmp_path) -> None:
    prompt = tmp_path / "system.txt"
    prompt.write_text("You are a careful assistant.\n", encoding="utf-8")
    text = f"data:\n  default:\n    system_prompt_file: {prompt}\n"
    assert on(judged(tmp_path, "dpo", text, "0.7.0"), "E-PROMPT-FILE") == []


def test_a_default_prompt_file_is_one_finding_for_all_entries(tmp_path) -> None:
    text = f"data:\n  default:\n    prompt_file: {tmp_path / 'nope.txt'}\n"
    found = on(judged(tmp_path, "rlvr", text, "pin"), "E-PROMPT-FILE")
    assert [f.key for f in found] == ["data.default.prompt_file"]
    assert "interfaces.py:81" in found[0].message


def test_relative_prompt_files_are_opened_from_the_checkout(tmp_path, monkeypatch, capsys) -> None:
    # the shipped rlvr config names examples/prompts/cot.txt, which every NeMo-RL checkout has
    code, out = cli_dry_run(monkeypatch, capsys, tmp_path, "rlvr", "", "0.7.0")
    assert [f for f in out["findings"] if f["code"] == "E-PROMPT-FILE"] == []
    text = "data:\n  default:\n    prompt_file: mine.txt\n"
    code, out = cli_dry_run(monkeypatch, capsys, tmp_path / "b", "rlvr", text, "0.7.0")
    assert code == 1
    [error] = [f for f in out["findings"] if f["code"] == "E-PROMPT-FILE"]
    assert str(tmp_path / "b" / "nemo-rl" / "mine.txt") in error["message"]


def test_a_relative_prompt_file_beside_the_config_gets_its_absolute_path_as_the_fix(
    tmp_path, monkeypatch, capsys
) -> None:
    (tmp_path / "mine.txt").write_text("Answer briefly.\n", encoding="utf-8")
    text = "data:\n  default:\n    prompt_file: mine.txt\n"
    code, out = cli_dry_run(monkeypatch, capsys, tmp_path, "rlvr", text, "0.7.0")
    assert code == 1
    [error] = [f for f in out["findings"] if f["code"] == "E-PROMPT-FILE"]
    beside = Path(tmp_path) / "mine.txt"
    assert error["fix"] == f"write the absolute path: data.default.prompt_file: {beside}"


def test_before_0_6_0_grpo_reads_the_prompt_file_of_data_itself(tmp_path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["data"] = {"dataset_name": "OpenMathInstruct-2", "prompt_file": str(tmp_path / "no.txt")}
    version = parse_version("0.4.0", named=True)
    [error] = on(run_rules(cfg, "grpo", nemo_rl_version=version), "E-PROMPT-FILE")
    assert error.key == "data.prompt_file" and "interfaces.py:71" in error.message
