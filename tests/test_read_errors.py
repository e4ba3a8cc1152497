"""Files that cannot be read, are not UTF-8 or are not YAML give `path: E-CODE what. Fix: ...`
and exit 2, never a traceback; `validate` says when it could not read its input; a preflight
rule that crashes stops the launch (E-RULE-CRASH naming the rule)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_toys import REPO
from unreadable import unreadable

from catalog.contracts import validate_artifact
from catalog.errors import Finding
from runners.preflight import RULES, rule
from steps.cli import main

PAIR = {"prompt": "2+2?", "chosen": "4", "rejected": "5"}


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STEPS_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("STEPS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def rl_prep_dry_run(cwd: Path, config: Path) -> int:
    runs = str(cwd / "runs")
    return main(["run", "data_prep/rl_prep", "-c", str(config), "--dry-run", "--runs-dir", runs])


def one_line(err: str) -> str:
    """The one finding printed: its `path:line: CODE message` line and its `Fix:` line."""
    assert "Traceback" not in err
    head, fix = [ln for ln in err.splitlines() if ln.strip()]
    assert fix.startswith("  Fix: ")
    return head


def test_unreadable_config_is_e_config_read_exit_2(cwd: Path, capsys):
    config = cwd / "mine.yaml"
    config.write_text("defaults: default.yaml\n")
    with unreadable(config):
        code = rl_prep_dry_run(cwd, config)
    line = one_line(capsys.readouterr().err)
    assert code == 2
    assert line.startswith(f"{config}: E-CONFIG-READ cannot read the config file: Permission")
    assert not (cwd / "runs").exists() and not (cwd / "output").exists()


def test_non_utf8_config_names_the_line(cwd: Path, capsys):
    config = cwd / "mine.yaml"
    config.write_bytes(b"# ok\nsample: 1\n# caf\xe9\n")
    assert rl_prep_dry_run(cwd, config) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"{config}:3: E-CONFIG-READ the config file is not UTF-8 text")


def test_a_folder_named_as_config_says_it_is_a_folder(cwd: Path, capsys):
    folder = cwd / "configs"
    folder.mkdir()
    assert rl_prep_dry_run(cwd, folder) == 2
    assert "is a directory, not a config file" in one_line(capsys.readouterr().err)


def test_an_inherited_config_that_cannot_be_read_names_the_chain(cwd: Path, capsys):
    parent = cwd / "parent.yaml"
    parent.write_text("sample: 1\n")
    child = cwd / "child.yaml"
    child.write_text(f"defaults: {parent.name}\n")
    with unreadable(parent):
        assert rl_prep_dry_run(cwd, child) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"{parent}: E-CONFIG-READ") and f"inherited via {child}" in line


@pytest.mark.parametrize(
    ("content", "code", "line", "what"),
    [
        (b"name: p\nstages: [caf\xe9]\n", "E-PIPELINE-FILE", 2, "not UTF-8"),
        (b"name: p\nstages: [a\n", "E-PIPELINE-YAML", 3, "invalid YAML"),
    ],
)
def test_bad_pipeline_file_is_a_setup_error(cwd: Path, capsys, content, code, line, what):
    path = cwd / "p.yaml"
    path.write_bytes(content)
    for args in (["plan", str(path)], ["pipeline", "run", str(path), "--dry-run"]):
        assert main(args) == 2
        err = one_line(capsys.readouterr().err)
        assert err.startswith(f"{path}:{line}: {code} ") and what in err
    assert sorted(p.name for p in cwd.iterdir()) == ["p.yaml"]


def test_unreadable_pipeline_file_is_a_setup_error(cwd: Path, capsys):
    path = cwd / "p.yaml"
    path.write_text((REPO / "pipelines" / "tiny_rlvr.yaml").read_text())
    with unreadable(path):
        assert main(["plan", str(path)]) == 2
    err = one_line(capsys.readouterr().err)
    assert err.startswith(f"{path}: E-PIPELINE-FILE cannot read the pipeline file: Permission")


def test_an_unreadable_input_is_reported_as_such_not_as_empty(tmp_path: Path):
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps(PAIR) + "\n")
    with unreadable(data):
        report = validate_artifact("preference_jsonl", data)
    assert report.errors == 1
    (f,) = report.findings
    assert (f.code, f.path) == ("E-JSONL", str(data))
    assert f.message == "input cannot be read (Permission denied)"


@pytest.mark.parametrize("workers", [1, 2])
def test_an_unreadable_shard_in_a_folder_is_reported_not_hidden(tmp_path: Path, workers: int):
    (tmp_path / "a.jsonl").write_text(json.dumps(PAIR) + "\n")
    locked = tmp_path / "b.jsonl"
    locked.write_text(json.dumps(PAIR) + "\n")
    with unreadable(locked):
        report = validate_artifact("preference_jsonl", tmp_path, workers=workers)
    assert report.errors == 1 and report.rows == 1
    (f,) = report.findings
    assert (f.code, f.path) == ("E-JSONL", str(locked))
    assert f.message == "cannot read (Permission denied)"


def test_a_crashing_preflight_rule_is_an_error_naming_it_and_nothing_runs(cwd: Path, capsys):
    @rule("test_crashes_on_purpose", needs=("rl_prep_blend",))
    def crashes(ctx):
        raise KeyError("an unexpected shape")

    try:
        out = cwd / "prepared"
        code = main(["run", "data_prep/rl_prep", "-c", "tiny", f"output_dir={out}"])
    finally:
        RULES.pop("test_crashes_on_purpose")
    err = capsys.readouterr().err
    assert code == 1 and "preflight failed" in err
    (line,) = [ln for ln in err.splitlines() if "E-RULE-CRASH" in ln]
    assert "preflight rule `test_crashes_on_purpose` crashed" in line
    assert "KeyError: 'an unexpected shape'" in line and "  Fix: report this bug" in err
    assert not out.exists()


def test_a_rule_raising_a_user_error_reports_that_error(cwd: Path, capsys):
    @rule("test_raises_a_finding", needs=("rl_prep_blend",))
    def raises(ctx):
        from catalog.errors import StepsError

        raise StepsError("E-SOMETHING", "a located problem", path="x.yaml", line=3)
        yield Finding("never", "reached")

    try:
        code = main(["run", "data_prep/rl_prep", "-c", "tiny", "--dry-run", "--runs-dir", "runs"])
    finally:
        RULES.pop("test_raises_a_finding")
    assert code == 1 and "x.yaml:3: E-SOMETHING a located problem" in capsys.readouterr().out
