"""One judge: `validate TYPE PATH --step S -c CFG` and `run S -c CFG --dry-run` give the same
verdict on the same rows (both go through catalog.contracts.options.step_contract), and one
cause is one finding: a wrong override the user typed is reported once, first, as typed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from pipeline_toys import steps_main
from preflight_fixtures import GYM_ROW, gym_root
from run_fixtures import fake_checkout
from test_gym_servers import chat_row, dapo_row, shards

PAIR = {"prompt": "2+2?", "chosen": "4", "rejected": "5"}


def _agent(name: str) -> dict:
    return {**GYM_ROW, "agent_ref": {"type": "responses_api_agents", "name": name}}


GYM_SETS = {
    "good": [GYM_ROW] * 6,
    "dapo_without_task_fields": [dapo_row(i) for i in range(9)],
    "chat_without_id": [chat_row(i) for i in range(5)] + [GYM_ROW],
    "agent_not_loaded": [_agent("code_gen_simple_agent")] * 7 + [GYM_ROW],
    "mixed": [
        GYM_ROW,
        dapo_row(1),
        _agent("math_with_judge_simple_agnt"),
        {**GYM_ROW, "responses_create_params": {"input": "x", "max_tokens": 5}},
        {**GYM_ROW, "expected_answer": 4},
        chat_row(2),
    ],
}
DPO_SETS = {
    "good": [PAIR] * 4,
    "identical": [{"prompt": "p", "chosen": "a", "rejected": "a"}] * 5 + [PAIR],
    "missing": [{"prompt": "p", "chosen": "a"}] * 3 + [{"prompt": "p"}],
}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = fake_checkout(tmp_path / "nemo-rl")
    gym_root(root / "3rdparty" / "Gym-workspace")
    return root


def _verdicts(findings: list[dict], folder: Path) -> Counter:
    """(code, key, line, message) of the findings about files in `folder`, counted."""
    return Counter(
        (f["code"], f.get("key"), f.get("line"), f["message"])
        for f in findings
        if str(f.get("path") or "").startswith(str(folder))
    )


def _both(tmp_path: Path, checkout: Path, step: str, config: str, type_name: str, folder: Path):
    env = {"NEMO_RL_HOME": str(checkout)}
    checked = steps_main(
        "validate", type_name, str(folder), "--step", step, "-c", config, "--json",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    dry = steps_main(
        "run", step, "-c", config, "--input", f"train={folder}", "--dry-run", "--json",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert "Traceback" not in checked.stderr + dry.stderr
    report = json.loads(checked.stdout)
    return (
        report,
        _verdicts(report["findings"], folder),
        _verdicts(json.loads(dry.stdout)["findings"], folder),
    )


@pytest.mark.parametrize("name", sorted(GYM_SETS))
def test_validate_and_the_dry_run_judge_gym_rows_alike(
    tmp_path: Path, checkout: Path, name: str
) -> None:
    folder = shards(tmp_path / name, GYM_SETS[name], 2)
    report, validated, dry_run = _both(
        tmp_path, checkout, "rl/nemo_rl/rlvr", "nemo_gym_tiny", "training_jsonl", folder
    )
    assert validated == dry_run
    assert report["ok"] == (name == "good")
    assert sum(validated.values()) == report["errors"] + report["warnings"]


@pytest.mark.parametrize("name", sorted(DPO_SETS))
def test_validate_and_the_dry_run_judge_preference_rows_alike(
    tmp_path: Path, checkout: Path, name: str
) -> None:
    folder = shards(tmp_path / name, DPO_SETS[name], 2)
    report, validated, dry_run = _both(
        tmp_path, checkout, "rl/nemo_rl/dpo", "tiny", "training_jsonl", folder
    )
    assert validated == dry_run
    assert report["ok"] == (name == "good")


def test_a_mistyped_override_is_one_finding_first_with_the_value_as_typed(tmp_path: Path) -> None:
    proc = steps_main(
        "run", "rl/nemo_rl/rlvr", "-c", "nemo_gym_tiny", "--dry-run", "--json",
        "policy.max_total_sequence_length=abc", cwd=tmp_path,
    )  # fmt: skip
    findings = json.loads(proc.stdout)["findings"]
    typed = [f for f in findings if f["code"] == "E-SCHEMA-TYPE"]
    assert len(typed) == 1 and findings[0] == typed[0]
    assert typed[0]["path"] == "override 'policy.max_total_sequence_length=abc'"
    assert "got 'abc'" in typed[0]["message"] and "abcabc" not in typed[0]["message"]
    assert "policy.generation.max_new_tokens" in typed[0]["message"]  # folded in, named
