"""rl_prep's dry run checks a blend's mapped rows against the fields their agent's server reads.

A DAPO-Math-style Parquet mapped in the blend and routed to math_with_judge_simple_agent must
give rows with `question` and `expected_answer` (math_with_judge's verify request): a map that
fills only one of them is found by the dry run, before any row is written, naming the dataset,
the row, the agent, the server and the field. Driven as a user drives it (`steps run
data_prep/rl_prep --dry-run` with the NeMo-RL checkout whose Gym submodule is the tests' tree).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from preflight_fixtures import gym_root
from run_fixtures import fake_checkout
from test_quickstart_chain import real_checkout
from test_rl_prep import write_blend, write_jsonl
from test_rl_prep_mapping import AGENT, MAP, dapo_rows, write_parquet

from steps.cli import main

TASK = "E-GYM-TASK-FIELD"
UNCHECKED = "W-BLEND-AGENT-UNCHECKED"


def checkout(tmp_path: Path) -> Path:
    root = fake_checkout(tmp_path / "nemo-rl")
    gym_root(root / "3rdparty" / "Gym-workspace")
    return root


def dry_run(tmp_path: Path, capsys, blend: Path, *extra: str) -> tuple[int, list[dict]]:
    code = main(
        ["run", "data_prep/rl_prep", "--dry-run", "--json", "--runs-dir", str(tmp_path / "runs"),
         f"blend_path={blend}", f"output_dir={tmp_path / 'out'}", *extra]
    )  # fmt: skip
    return code, json.loads(capsys.readouterr().out)["findings"]


def with_gym(tmp_path: Path) -> tuple[str, str]:
    return "--nemo-rl", str(checkout(tmp_path))


def test_a_map_that_misses_a_field_the_agent_s_server_reads_is_found_before_writing(
    tmp_path: Path, capsys
):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(5))
    partial = {"question": MAP["question"]}  # no expected_answer: math_with_judge needs it
    dataset = {"name": "dapo", "path": "dapo.parquet", "map": partial, "agent_ref": AGENT}
    blend = write_blend(tmp_path, [dataset])
    code, findings = dry_run(tmp_path, capsys, blend, *with_gym(tmp_path))
    [f] = [f for f in findings if f["code"] == TASK]
    assert code == 1
    assert f["message"].startswith("dataset `dapo`: expected_answer: `expected_answer` is missing")
    assert f"agent `{AGENT}`" in f["message"] and "server `math_with_judge`" in f["message"]
    assert (f["path"], f["line"]) == (str(tmp_path / "dapo.parquet"), 1)
    assert not (tmp_path / "out").exists()
    assert not [f for f in findings if f["code"] == UNCHECKED]


def test_a_real_run_stops_at_the_same_finding_before_writing_a_row(tmp_path: Path, capsys):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(5))
    dataset = {"name": "dapo", "path": "dapo.parquet", "map": {"question": "prompt.0.content"}}
    blend = write_blend(tmp_path, [{**dataset, "agent_ref": AGENT}])
    code = main(
        ["run", "data_prep/rl_prep", "--runs-dir", str(tmp_path / "runs"), *with_gym(tmp_path),
         f"blend_path={blend}", f"output_dir={tmp_path / 'out'}"]
    )  # fmt: skip
    assert code == 1 and TASK in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_under_skip_a_map_that_fails_every_first_row_is_still_an_error(tmp_path: Path, capsys):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(5))
    dataset = {"name": "dapo", "path": "dapo.parquet", "map": {"question": "prompt.0.content"}}
    blend = write_blend(tmp_path, [{**dataset, "agent_ref": AGENT}])
    code, findings = dry_run(tmp_path, capsys, blend, *with_gym(tmp_path), "on_bad_row=skip")
    [f] = [f for f in findings if f["code"] == TASK]
    assert code == 1 and "`expected_answer` is missing" in f["message"]


def test_a_mistyped_task_field_names_the_type_the_server_takes(tmp_path: Path, capsys):
    rows = [{"conversation": [{"role": "user", "content": "hi"}], "gold": [1, 2]}]
    write_jsonl(tmp_path / "chat.jsonl", rows)
    mapping = {"responses_create_params.input": "conversation",
               "question": "conversation.0.content", "expected_answer": "gold"}  # fmt: skip
    blend = write_blend(tmp_path, [{"name": "chat", "path": "chat.jsonl", "map": mapping,
                                    "agent_ref": AGENT}])  # fmt: skip
    code, findings = dry_run(tmp_path, capsys, blend, *with_gym(tmp_path))
    [f] = [f for f in findings if f["code"] == TASK]
    assert code == 1 and "`expected_answer` must be string, got array" in f["message"]


def test_a_complete_map_is_clean_against_the_agent_s_server(tmp_path: Path, capsys):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(5))
    dataset = {"name": "dapo", "path": "dapo.parquet", "map": MAP, "agent_ref": AGENT}
    blend = write_blend(tmp_path, [dataset])
    code, findings = dry_run(tmp_path, capsys, blend, *with_gym(tmp_path))
    assert code == 0 and findings == [], findings


def test_without_a_gym_tree_the_pinned_gym_s_fields_still_hold(tmp_path: Path, capsys):
    write_parquet(tmp_path / "a.parquet", dapo_rows(3))
    datasets = [
        {"name": "a", "path": "a.parquet", "map": {"question": "prompt.0.content"},
         "agent_ref": AGENT},
        {"name": "b", "path": "a.parquet", "map": MAP, "agent_ref": "my_own_agent"},
    ]  # fmt: skip
    code, findings = dry_run(tmp_path, capsys, write_blend(tmp_path, datasets))
    assert code == 1
    [f] = [f for f in findings if f["code"] == TASK]
    assert f["message"].startswith("dataset `a`: expected_answer: `expected_answer` is missing")
    [note] = [f for f in findings if f["code"] == UNCHECKED]
    assert note["severity"] == "warning" and "`my_own_agent` (datasets b)" in note["message"]
    assert AGENT not in note["message"]


def test_an_agent_no_gym_config_defines_is_said_once_and_others_still_checked(
    tmp_path: Path, capsys
):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(3))
    datasets = [
        {"name": "mine", "path": "dapo.parquet", "map": MAP, "agent_ref": "my_own_agent"},
        {"name": "dapo", "path": "dapo.parquet", "map": {"question": "prompt.0.content"},
         "agent_ref": AGENT},
    ]  # fmt: skip
    code, findings = dry_run(tmp_path, capsys, write_blend(tmp_path, datasets), *with_gym(tmp_path))
    assert code == 1
    [note] = [f for f in findings if f["code"] == UNCHECKED]
    assert "`my_own_agent` is defined by none of the Gym's config files" in note["message"]
    assert [f["message"].split(":")[0] for f in findings if f["code"] == TASK] == ["dataset `dapo`"]


# --- against NeMo-RL at the pin with its real Gym submodule (skips without git mirrors) --------

real_rl = real_checkout  # the quickstart test's module fixture, under this module's name


@pytest.mark.slow
def test_the_quickstart_blend_routes_rows_the_real_gym_server_can_score(
    real_rl: Path, tmp_path: Path, capsys
):
    code = main(
        ["run", "data_prep/rl_prep", "-c", "tiny", "--dry-run", "--json", "--nemo-rl",
         str(real_rl), "--runs-dir", str(tmp_path / "runs"),
         f"output_dir={tmp_path / 'out'}"]
    )  # fmt: skip
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert code == 0 and [f for f in findings if f["code"] in (TASK, UNCHECKED)] == [], findings


@pytest.mark.slow
def test_a_dapo_map_without_expected_answer_fails_against_the_real_math_with_judge(
    real_rl: Path, tmp_path: Path, capsys
):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(5))
    dataset = {"name": "dapo", "path": "dapo.parquet", "map": {"question": MAP["question"]},
               "agent_ref": AGENT}  # fmt: skip
    blend = write_blend(tmp_path, [dataset])
    code, findings = dry_run(tmp_path, capsys, blend, "--nemo-rl", str(real_rl))
    [f] = [f for f in findings if f["code"] == TASK]
    assert code == 1 and "`expected_answer` is missing" in f["message"], findings
    assert "server `math_with_judge`" in f["message"]


def test_skip_drops_rows_the_server_cannot_score_in_the_dry_run_and_the_run_alike(
    tmp_path: Path, capsys
):
    rows = [{"responses_create_params": {"input": [{"role": "user", "content": f"{i}+1?"}]},
             "question": f"{i}+1?", "expected_answer": f"{i + 1}"} for i in range(40)]  # fmt: skip
    for i in (3, 35):  # one within the dry run's first rows, one after
        del rows[i]["question"]
    write_jsonl(tmp_path / "m.jsonl", rows)
    blend = write_blend(tmp_path, [{"name": "m", "path": "m.jsonl", "agent_ref": AGENT}])
    code, findings = dry_run(tmp_path, capsys, blend)
    [f] = [f for f in findings if f["code"] == TASK]
    assert code == 1 and (f["path"], f["line"]) == (str(tmp_path / "m.jsonl"), 4)
    assert f["fix"].endswith("or set on_bad_row=skip to drop such rows and count them")
    code, findings = dry_run(tmp_path, capsys, blend, "on_bad_row=skip")
    assert code == 0 and [f for f in findings if f["code"] == TASK] == []
    code = main(
        ["run", "data_prep/rl_prep", "--json", "--runs-dir", str(tmp_path / "runs"),
         f"blend_path={blend}", f"output_dir={tmp_path / 'out'}", "on_bad_row=skip"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert sum(manifest["splits"][s]["rows"] for s in manifest["splits"]) == 38, manifest
