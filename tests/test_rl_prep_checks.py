"""rl_prep is checked before it runs, and what it writes passes its own output contract.

`run data_prep/rl_prep --dry-run` reports every bad option and blend problem the run would stop
at, with file and line; unreadable or non-UTF-8 inputs are clean errors (exit 2); a row over
the JSONL line cap is a bad row; skipped rows are counted on stderr.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_rl_prep import gym_row, prep, write_blend, write_jsonl
from unreadable import unreadable

from catalog.contracts import jsonl, validate_artifact
from catalog.errors import StepsError
from steps.cli import main

STEP = Path(__file__).resolve().parents[1] / "steps" / "data_prep" / "rl_prep"
CONFIG = STEP / "config"


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STEPS_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("STEPS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def dry_run(cwd: Path, capsys, *overrides: str) -> tuple[int, list[dict]]:
    """`run data_prep/rl_prep -c tiny --dry-run --json ...`: exit code and findings."""
    args = ["run", "data_prep/rl_prep", "-c", "tiny", "--dry-run", "--json"]
    code = main([*args, "--runs-dir", str(cwd / "runs"), *overrides])
    out = capsys.readouterr().out
    return code, json.loads(out)["findings"] if out.strip() else []


def errors(findings: list[dict]) -> dict[str, dict]:
    return {f.get("key") or f["code"]: f for f in findings if f.get("severity") == "error"}


def line_of(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln)


def test_dry_run_of_the_tiny_config_is_clean(cwd: Path, capsys):
    code, findings = dry_run(cwd, capsys)
    assert code == 0 and errors(findings) == {}
    assert not (cwd / "output").exists()


def test_dry_run_reports_every_bad_option_where_it_was_set(cwd: Path, capsys):
    bad = ["shard_size=abc", "train_ratio=high", "sample=1.5", "workers=0", "on_bad_row=maybe"]
    code, findings = dry_run(cwd, capsys, *bad, "output_type=pdf_jsonl")
    found = errors(findings)
    assert code == 1
    keys = {"shard_size", "train_ratio", "sample", "workers", "on_bad_row", "output_type"}
    assert set(found) == keys
    assert {f["code"] for f in found.values()} == {"E-CONFIG-VALUE"}
    # A value from the command line is reported at the override that set it, not the YAML line
    # it replaced.
    assert found["shard_size"]["path"] == "override 'shard_size=abc'"
    assert found["workers"]["path"] == "override 'workers=0'" and "line" not in found["workers"]
    assert "'abc'" in found["shard_size"]["message"] and "256MB" in found["shard_size"]["fix"]
    assert "nemo_gym_jsonl" in found["output_type"]["fix"]
    assert "train_ratio=0.98" in found["train_ratio"]["fix"]
    assert "0.01" not in found["train_ratio"]["fix"]  # the old hint suggested train_ratio=0.01
    assert not (cwd / "output").exists()


def test_a_bad_option_in_a_config_file_is_reported_at_its_line(cwd: Path, capsys):
    child = cwd / "mine.yaml"
    child.write_text(f"defaults: {CONFIG / 'tiny.yaml'}\nworkers: 0\nshard_size: abc\n")
    code = main(["run", "data_prep/rl_prep", "-c", str(child), "--dry-run", "--json",
                 "--runs-dir", str(cwd / "runs")])  # fmt: skip
    found = errors(json.loads(capsys.readouterr().out)["findings"])
    assert code == 1
    assert (found["workers"]["path"], found["workers"]["line"]) == (str(child), 2)
    assert (found["shard_size"]["path"], found["shard_size"]["line"]) == (str(child), 3)


def test_dry_run_reports_an_unknown_added_key(cwd: Path, capsys):
    code, findings = dry_run(cwd, capsys, "+shard_sise=1MB")
    assert code == 1
    assert "did you mean shard_size?" in errors(findings)["shard_sise"]["fix"]


def test_dry_run_reports_a_blend_problem_at_its_line_and_a_folder_as_blend(cwd: Path, capsys):
    write_jsonl(cwd / "a.jsonl", [gym_row(0)])
    blend = write_blend(cwd, [{"name": "a", "path": "a.jsonl", "wieght": 2}])
    code, findings = dry_run(cwd, capsys, f"blend_path={blend}")
    (f,) = errors(findings).values()
    assert (code, f["code"], f["path"], f["line"]) == (1, "E-BLEND", str(blend), 4)
    assert "did you mean `weight`?" in f["fix"]

    folder = cwd / "adir"
    folder.mkdir()
    code, findings = dry_run(cwd, capsys, f"blend_path={folder}")
    (f,) = errors(findings).values()
    assert (code, f["code"]) == (1, "E-BLEND") and "is a directory" in f["message"]


def test_dry_run_catches_missing_inputs_and_bad_ratios_the_run_would_reject(cwd: Path, capsys):
    blend = write_blend(cwd, [{"name": "a", "path": "nope.jsonl"}])
    code, findings = dry_run(cwd, capsys, f"blend_path={blend}")
    (f,) = errors(findings).values()
    assert (code, f["code"], f["line"]) == (1, "E-BLEND", 2) and "nope.jsonl" in f["message"]

    code, findings = dry_run(cwd, capsys, "train_ratio=0.9", "val_ratio=0.2")
    assert code == 1 and errors(findings)["train_ratio"]["code"] == "E-CONFIG-VALUE"


def test_dry_run_refuses_an_output_dir_rl_prep_did_not_write(cwd: Path, capsys):
    precious = cwd / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    code, findings = dry_run(cwd, capsys, f"output_dir={precious}")
    assert code == 1 and errors(findings)["E-OUTPUT-DIR"]["path"] == str(precious)


def test_unreadable_blend_is_an_error_naming_it(cwd: Path, capsys):
    blend = write_blend(cwd, [{"name": "a", "path": "a.jsonl"}])
    with unreadable(blend):
        code, findings = dry_run(cwd, capsys, f"blend_path={blend}")
        with pytest.raises(StepsError) as err:
            prep(blend, cwd / "out")
    (f,) = errors(findings).values()
    assert (code, f["code"], f["path"]) == (1, "E-BLEND", str(blend))
    assert "Permission denied" in f["message"]
    assert (err.value.finding.code, err.value.exit_code) == ("E-BLEND", 2)
    assert not (cwd / "out").exists() and not list(cwd.glob(".out*"))


def test_unreadable_input_file_stops_the_run_before_any_write(cwd: Path, capsys):
    data = write_jsonl(cwd / "a.jsonl", [gym_row(0)])
    blend = write_blend(cwd, [{"name": "a", "path": "a.jsonl"}])
    out = cwd / "out"
    with unreadable(data):
        code = main(["run", "data_prep/rl_prep", f"blend_path={blend}", f"output_dir={out}"])
        with pytest.raises(StepsError) as err:  # the runner itself, past preflight: exit 2
            prep(blend, out)
    stderr = capsys.readouterr().err
    assert code == 1  # preflight reports it, as a finding, and nothing is launched
    assert f"{data}: E-BLEND dataset `a`: cannot read this input file (Permission denied)" in (
        stderr
    )
    assert "Traceback" not in stderr
    assert (err.value.finding.path, err.value.exit_code) == (str(data), 2)
    assert not out.exists() and not list(cwd.glob(".out*"))


def test_non_utf8_blend_is_an_error_at_its_line(cwd: Path):
    blend = cwd / "blend.yaml"
    blend.write_bytes(b"datasets:\n  - name: caf\xe9\n    path: a.jsonl\n")
    with pytest.raises(StepsError) as err:
        prep(blend, cwd / "out")
    f = err.value.finding
    assert (f.code, f.line, err.value.exit_code) == ("E-BLEND", 2, 2)
    assert "not UTF-8" in f.message


def test_invalid_yaml_blend_is_a_setup_error(cwd: Path):
    blend = cwd / "blend.yaml"
    blend.write_text("datasets:\n  - name: a\n    path: [unclosed\n")
    with pytest.raises(StepsError) as err:
        prep(blend, cwd / "out")
    assert (err.value.finding.code, err.value.exit_code) == ("E-BLEND", 2)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_row_over_the_line_cap_is_a_bad_row_and_the_output_passes_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
):
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 2000)  # the cap `validate` applies
    rows = [gym_row(i) for i in range(30)]
    rows[7] = gym_row(7, pad="x" * 3000)  # over the cap as read
    del rows[12]["agent_ref"]  # re-serialized with the dataset's agent_ref: over the cap too
    rows[12]["pad"] = "y" * 1950
    write_jsonl(tmp_path / "a.jsonl", rows)
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl", "agent_ref": "math_agent"}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out", workers=workers)
    assert (err.value.finding.code, err.value.finding.line) == ("E-JSONL", 8)
    assert "line too long (over 2000 bytes)" in err.value.finding.message

    summary = prep(blend, tmp_path / "out", on_bad_row="skip", workers=workers)
    assert summary["skipped_by_code"] == {"E-JSONL": 2}
    assert sum(summary["rows"].values()) == 28
    report = validate_artifact("nemo_gym_jsonl", tmp_path / "out")
    assert report.ok and report.rows == 28


def test_skipped_rows_are_counted_in_the_report_on_stderr(tmp_path: Path, capsys):
    rows = [gym_row(i) for i in range(20)]
    rows[3], rows[5] = "not json", {"id": 5, "note": "no prompt"}
    write_jsonl(tmp_path / "a.jsonl", rows)
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    prep(blend, tmp_path / "out", on_bad_row="skip")
    err = capsys.readouterr().err
    assert "rl_prep: skipped 2 bad row(s) (E-GYM-ROW: 1, E-JSONL: 1)" in err


def test_the_shipped_blends_are_valid_blend_files():
    from runners.rl_prep.blend import load_blend

    for name in ("blend_tiny.yaml", "blend_tiny_dpo.yaml"):
        blend = load_blend(STEP / "data" / name)
        assert blend.datasets and yaml.safe_load((STEP / "data" / name).read_text())


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_mid_write_removes_the_work_folder_and_keeps_the_previous_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
):
    import multiprocessing

    from runners.rl_prep.shards import SplitWriter

    write_jsonl(tmp_path / "a.jsonl", [gym_row(i) for i in range(300)])
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    out = tmp_path / "out"
    prep(blend, out, shard_size="2KB")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    roll = SplitWriter._roll

    def roll_then_interrupt(self):  # Ctrl-C lands while the third shard is written
        roll(self)
        if self.shards[-1]["path"].endswith("shard_000002.jsonl"):
            raise KeyboardInterrupt

    monkeypatch.setattr(SplitWriter, "_roll", roll_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        prep(blend, out, shard_size="2KB", force=True, workers=workers)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "blend.yaml", "out"]
    assert multiprocessing.active_children() == []  # no worker left behind


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("datasets:\n  - a\n", 2, "datasets[0]: expected a mapping with name and path"),
        ("datasets:\n  - name: ' '\n    path: a.jsonl\n", 2, "`name` is required"),
        ("datasets:\n  - name: a\n    path: 5\n", 3, "datasets[0] (a): `path` is required"),
        ("datasets:\n  - {name: a, path: a.jsonl, weight: -1}\n", 2, "(a).weight: input should"),
        ("datasets:\n  - name: a\n    path: a\n    agent_ref: {type: x}\n", 4, "agent_ref: expe"),
        ("datasets: []\n", 1, "`datasets` must be a non-empty list"),
        ("datasets:\n  - {name: a, path: a.jsonl}\nshard_size: lots\n", 3, "shard_size: could"),
        ("datasets:\n  - {name: a, path: a.jsonl}\ntrain_ratio: 2\n", 3, "train_ratio: input"),
    ],
)
def test_blend_schema_errors_name_the_line_and_the_key(tmp_path: Path, text, line, message):
    from runners.rl_prep.blend import load_blend

    blend = tmp_path / "blend.yaml"
    blend.write_text(text)
    with pytest.raises(StepsError) as err:
        load_blend(blend)
    f = err.value.finding
    assert (f.code, f.path, f.line, err.value.exit_code) == ("E-BLEND", str(blend), line, 1)
    assert message in f.message
