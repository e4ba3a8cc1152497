"""Rows a Gym resource server cannot score fail without a Gym tree: the pinned Gym's table.

As the user met it: no NeMo-RL checkout at hand, a blend routed to math_with_judge without a
`map:` for `question`; the prep, `validate` and the GRPO dry run all said OK. The server field
contracts are derived at build time from the pinned Gym (tools/gen_gym_servers.py), so they
hold here; a Gym tree, when given, is read instead (test_rl_prep_agent_fields.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from run_fixtures import clean_env, steps_cli
from test_rl_prep import write_blend
from test_rl_prep_mapping import AGENT, dapo_rows, write_parquet

from catalog.contracts.gym_facts import pinned_routes
from catalog.contracts.gym_fast import gym_accept
from catalog.contracts.gym_rows import nemo_gym_rows

TASK = "E-GYM-TASK-FIELD"
ROW = {
    "responses_create_params": {"input": [{"role": "user", "content": "2+2?"}]},
    "agent_ref": {"type": "responses_api_agents", "name": AGENT},
    "expected_answer": "4",
}


def cli(monkeypatch, capsys, tmp_path: Path, *argv: str):
    env = clean_env(tmp_path)  # no NEMO_RL_HOME: no Gym tree anywhere
    return steps_cli(monkeypatch, capsys, *argv, cwd=tmp_path, env=env)


def test_the_pinned_table_knows_math_with_judge_s_fields():
    route = pinned_routes([AGENT])[AGENT]
    assert route["server"] == "math_with_judge"
    assert {k for k, f in route["fields"].items() if f["required"]} == {
        "question",
        "expected_answer",
    }


def test_prep_of_rows_the_server_cannot_score_fails_without_a_gym_tree(
    tmp_path, monkeypatch, capsys
):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(5))
    dataset = {"name": "dapo", "path": "dapo.parquet", "agent_ref": AGENT,
               "map": {"expected_answer": "reward_model.ground_truth"}}  # fmt: skip
    blend = write_blend(tmp_path, [dataset])
    proc = cli(monkeypatch, capsys, tmp_path, "run", "data_prep/rl_prep", f"blend_path={blend}",
               f"output_dir={tmp_path / 'out'}", "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert proc.returncode == 1 and TASK in proc.stderr, proc.stderr
    assert "`question` is missing" in proc.stderr and "math_with_judge" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_validate_fails_rows_the_server_cannot_score_without_a_gym_tree(
    tmp_path, monkeypatch, capsys
):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "question": "2+2?"}) + "\n")
    proc = cli(monkeypatch, capsys, tmp_path, "validate", "nemo_gym_jsonl", str(rows))
    assert proc.returncode == 1
    assert f"{rows}:1: {TASK} question: `question` is missing" in proc.stderr
    assert "1 bad rows" in proc.stdout


def test_the_grpo_dry_run_fails_them_without_a_gym_tree(tmp_path, monkeypatch, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(ROW) + "\n")
    proc = cli(monkeypatch, capsys, tmp_path, "run", "rl/nemo_rl/rlvr", "-c", "nemo_gym",
               "--input", f"train={rows}", "--input", f"validation={rows}", "--dry-run",
               "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert proc.returncode == 1
    assert f"{rows}:1: {TASK} question: `question` is missing" in proc.stdout + proc.stderr


def test_the_fast_path_and_the_row_check_agree_on_every_pinned_agent():
    check, accept = nemo_gym_rows(), gym_accept()
    assert accept is not None
    lines = [json.dumps(ROW).encode(), json.dumps({**ROW, "question": "q"}).encode()]
    other = {**ROW, "agent_ref": {"type": "responses_api_agents", "name": "my_own_agent"}}
    lines.append(json.dumps(other).encode())
    for agent, route in sorted(pinned_routes().items())[:40]:
        full = {k: "x" for k, f in route["fields"].items() if f["required"]}
        row = {**ROW, "agent_ref": {"type": "responses_api_agents", "name": agent}, **full}
        lines.append(json.dumps(row).encode())
        lines.append(json.dumps({k: v for k, v in row.items() if k not in full}).encode())
    for line in lines:
        if accept(line):
            assert check(json.loads(line)) == [], line
    assert not accept(lines[0]) and check(json.loads(lines[0]))
    assert accept(lines[1]) and accept(lines[2])


def test_every_field_a_row_lacks_is_named_in_one_finding(tmp_path, monkeypatch, capsys):
    rows = tmp_path / "raw.jsonl"
    rows.write_text("".join(json.dumps({"problem": f"1+{i}?", "answer": f"{i + 1}"}) + "\n"
                            for i in range(5)))  # fmt: skip
    dataset = {"name": "m", "path": "raw.jsonl", "agent_ref": AGENT,
               "map": {"responses_create_params.input": "problem"}}  # fmt: skip
    blend = write_blend(tmp_path, [dataset])
    proc = cli(monkeypatch, capsys, tmp_path, "run", "data_prep/rl_prep", f"blend_path={blend}",
               f"output_dir={tmp_path / 'out'}", "--dry-run", "--json")  # fmt: skip
    [f] = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == TASK]
    assert "`expected_answer`, `question` are missing" in f["message"]
    assert "give each row `expected_answer` and `question`" in f["fix"]
