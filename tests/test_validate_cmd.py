"""`python -m steps validate`: output lines, summary, exit codes, options from a step config."""

from __future__ import annotations

import json

from steps.cli import main

GYM = {
    "responses_create_params": {"input": [{"role": "user", "content": "2+2?"}]},
    "agent_ref": {"type": "responses_api_agents", "name": "math_with_judge_simple_agent"},
    "question": "2+2?",
    "expected_answer": "4",
}


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_validate_prints_findings_on_stderr_and_the_summary_on_stdout_and_exits_1(tmp_path, capsys):
    bad = dict(GYM, agent_ref={"type": "responses_api_agents", "name": ""})
    p = write(tmp_path / "d.jsonl", [GYM, bad, GYM])
    assert main(["validate", "nemo_gym_jsonl", str(p)]) == 1
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert err[0].startswith(f"{p}:2: E-GYM-AGENT-REF agent_ref.name: agent_ref.name must be")
    assert "Fix:" not in err[0] and err[1].startswith("  Fix: ")
    assert captured.out.splitlines() == [
        "nemo_gym_jsonl (nemo_gym_rows): 3 rows in 1 file, 1 bad rows (E-GYM-AGENT-REF: 1). 1 error"
    ]


def test_validate_good_file_exits_0(tmp_path, capsys):
    p = write(tmp_path / "d.jsonl", [GYM, GYM])
    assert main(["validate", "nemo_gym_jsonl", str(p)]) == 0
    assert capsys.readouterr().out.strip().endswith("OK")


def test_validate_json_output_counts_all_errors_and_lists_the_first_n(tmp_path, capsys):
    p = write(tmp_path / "d.jsonl", [{"prompt": "q"}] * 7 + [{"prompt": "q", "chosen": "a"}])
    assert main(["validate", "preference_jsonl", str(p), "--json", "--max-errors", "1"]) == 1
    report = json.loads(capsys.readouterr().out)
    # two causes (no chosen, no rejected), each one finding over its rows; the first is shown
    assert report["errors"] == 2 and len(report["findings"]) == 1
    assert report["findings"][0]["message"].startswith("7 rows: ")
    assert report["bad_rows"] == 8 and report["bad_rows_by_code"] == {"E-DPO-ROW": 8}


def test_validate_options_rename_keys(tmp_path, capsys):
    p = write(tmp_path / "d.jsonl", [{"question": "q", "good": "a", "bad": "b"}])
    args = ["validate", "preference_jsonl", str(p), "--option", "prompt_key=question"]
    args += ["--option", "chosen_key=good", "--option", "rejected_key=bad"]
    assert main(args) == 0


def test_validate_with_step_config_picks_gym_rows_and_the_default_agent_ref(tmp_path, capsys):
    row = {k: v for k, v in GYM.items() if k != "agent_ref"}
    p = write(tmp_path / "d.jsonl", [row])
    args = ["validate", "training_jsonl", str(p), "--step", "rl/nemo_rl/rlvr", "-c", "nemo_gym"]
    assert main(args) == 0
    assert "nemo_gym_jsonl (nemo_gym_rows): 1 rows" in capsys.readouterr().out
    assert main(["validate", "nemo_gym_jsonl", str(p)]) == 1


def test_validate_unknown_type_exits_2_with_did_you_mean(tmp_path, capsys):
    assert main(["validate", "nemo_gym_json", str(tmp_path)]) == 2
    assert "nemo_gym_jsonl" in capsys.readouterr().err


def test_validate_missing_input_is_a_setup_error_exit_2_on_stderr(tmp_path, capsys):
    missing = tmp_path / "nope.jsonl"
    assert main(["validate", "nemo_gym_jsonl", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"{missing}: E-INPUT-NOT-FOUND ")


def test_validate_missing_checkpoint_names_the_hub_id_option(tmp_path, capsys):
    assert main(["validate", "hf_checkpoint", str(tmp_path / "model")]) == 2
    assert "--allow-hub-id" in capsys.readouterr().err


def test_validate_missing_input_with_json_is_one_document_with_the_finding(tmp_path, capsys):
    missing = tmp_path / "nope.jsonl"
    assert main(["validate", "nemo_gym_jsonl", str(missing), "--json"]) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert captured.err == ""
    assert doc["ok"] is False and doc["exit_code"] == 2
    (finding,) = doc["findings"]
    assert finding["code"] == "E-INPUT-NOT-FOUND" and finding["location"] == str(missing)
    assert finding["fix"]


def test_validate_dangling_symlink_is_unreadable_input_exit_2(tmp_path, capsys):
    link = tmp_path / "d.jsonl"
    link.symlink_to(tmp_path / "gone.jsonl")
    assert main(["validate", "nemo_gym_jsonl", str(link)]) == 2
    assert "E-INPUT-UNREADABLE" in capsys.readouterr().err


def test_validate_bad_option_is_a_usage_error_exit_2(tmp_path, capsys):
    p = write(tmp_path / "d.jsonl", [GYM])
    assert main(["validate", "nemo_gym_jsonl", str(p), "--option", "novalue"]) == 2
    assert "E-CLI-OPTION" in capsys.readouterr().err


def test_a_built_in_type_resolves_to_the_contract_the_type_graph_gives():
    from catalog.contracts.validation import _builtin_contract
    from catalog.types import load_types

    graph = load_types()
    for name, artifact in graph.types.items():
        assert _builtin_contract(name) in (None, artifact.contract), name
    assert _builtin_contract("nemo_gym_jsonl") == "nemo_gym_rows"
    assert _builtin_contract("nemo_gym_jsnol") is None  # the graph says did-you-mean


def test_validate_of_rows_starts_without_the_type_graph_s_pydantic_models(tmp_path):
    """Startup is part of every validate's time (bench/bench_validate.py: <= 3x a bare loop)."""
    import subprocess
    import sys

    rows = write(tmp_path / "d.jsonl", [GYM])
    probe = (
        "import sys; from steps.cli import main; "
        f"code = main(['validate', 'nemo_gym_jsonl', {str(rows)!r}]); "
        "print(code, 'pydantic' in sys.modules, 'catalog.types' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert proc.stdout.splitlines()[-1] == "0 False False", proc.stdout + proc.stderr


def test_the_judging_of_an_artifact_is_decided_without_the_cli(tmp_path):
    """runners.validate: a step's config picks the contract and its options, then the report."""
    from runners.validate import judge, prepare

    row = {k: v for k, v in GYM.items() if k != "agent_ref"}
    p = write(tmp_path / "d.jsonl", [row])
    judging = prepare("training_jsonl", p, step="rl/nemo_rl/rlvr", config="nemo_gym")
    assert (judging.type_name, judging.contract) == ("nemo_gym_jsonl", "nemo_gym_rows")
    assert judging.options["default_agent_ref"]["name"] == GYM["agent_ref"]["name"]
    report = judge(judging, p)
    assert report.ok and report.rows == 1


def test_validate_takes_run_s_flags_with_run_s_meaning(tmp_path, capsys):
    """`--nemo-rl DIR` and overrides as `run` takes them; `-o` means output (compose) only."""
    p = write(tmp_path / "d.jsonl", [GYM])
    argv = ["validate", "nemo_gym_jsonl", str(p), "--step", "rlvr", "-c", "nemo_gym"]
    assert main([*argv, "grpo.max_num_steps=3"]) == 0
    assert main([*argv, "--nemo-rl", str(tmp_path / "no-checkout")]) == 2
    assert f"E-GYM-VERSION {tmp_path / 'no-checkout'} is not a folder" in capsys.readouterr().err
    assert main([*argv, "-o", "grpo.max_num_steps=3"]) == 2
    assert "unrecognized arguments: -o" in capsys.readouterr().err
