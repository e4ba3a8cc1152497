"""A shell variable in a YAML path value (issue 38, after the boundary): NeMo-RL takes `$SCRATCH`
literally, so the dry run names the key and the `${oc.env:...}` that reads the environment."""

from __future__ import annotations

from user_configs import cli_dry_run, judged, on


def test_a_checkpoint_dir_under_scratch_is_an_error_with_the_oc_env_spelling(tmp_path) -> None:
    text = "checkpointing:\n  checkpoint_dir: $SCRATCH/dpo/ckpt\n"
    [error] = on(judged(tmp_path, "dpo", text, "0.7.0"), "E-SHELL-VARIABLE")
    assert error.key == "checkpointing.checkpoint_dir" and error.line == 3
    assert "folder literally named '$SCRATCH'" in error.message
    assert error.fix.startswith("write checkpointing.checkpoint_dir: ${oc.env:SCRATCH}/dpo/ckpt")


def test_the_oc_env_spelling_and_dollars_outside_paths_are_clean(tmp_path) -> None:
    text = (
        "checkpointing:\n  checkpoint_dir: ${oc.env:STEPS_OUTPUT,/tmp/out}/ckpt\n"
        "logger:\n  wandb:\n    name: cost-$5-run\n"  # not a path key
    )
    assert on(judged(tmp_path, "dpo", text, "0.7.0"), "E-SHELL-VARIABLE") == []


def test_a_braced_variable_is_refused_at_compile_naming_oc_env(tmp_path, monkeypatch, capsys):
    text = "checkpointing:\n  checkpoint_dir: ${HOME}/ckpt\n"
    code, out = cli_dry_run(monkeypatch, capsys, tmp_path, "dpo", text, "0.7.0")
    assert code == 1
    [error] = [f for f in out["findings"] if f["code"] == "E-CONFIG-INTERPOLATION"]
    assert error["key"] == "checkpointing.checkpoint_dir" and "${oc.env:HOME}" in error["fix"]


def test_a_data_path_with_a_variable_is_one_finding_not_also_a_missing_input(
    tmp_path, monkeypatch, capsys
) -> None:
    text = "data:\n  train:\n    data_path: $DATA/pairs.jsonl\n"
    code, out = cli_dry_run(monkeypatch, capsys, tmp_path, "dpo", text, "0.7.0")
    assert code == 1
    on_key = [f["code"] for f in out["findings"] if f.get("key") == "data.train.data_path"]
    assert on_key == ["E-SHELL-VARIABLE"]
