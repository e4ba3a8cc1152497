"""rl_prep's command-line forms: `--sample N` is `sample=N`, and a missing pyarrow is found by
the dry run (naming the extra to install), not by the run after it started."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_rl_prep import write_blend

from steps.cli import main


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STEPS_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("STEPS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def run_json(cwd: Path, capsys, *argv: str) -> tuple[int, dict]:
    code = main(["run", "data_prep/rl_prep", "--json", "--runs-dir", str(cwd / "runs"), *argv])
    return code, json.loads(capsys.readouterr().out)


def test_sample_flag_reads_the_first_n_rows_as_the_sample_override_does(cwd: Path, capsys):
    code, flag = run_json(cwd, capsys, "-c", "tiny", "--sample", "2")
    assert code == 0 and flag["config"]["sample"] == 2
    reads = {name: sum(d[s] for s in ("train", "val", "test")) for name, d in
             flag["result"]["datasets"].items()}  # fmt: skip
    assert reads["math_gym"] <= 2 and reads["instruct_chat"] <= 2
    code, override = run_json(cwd, capsys, "-c", "tiny", "sample=2")
    assert code == 0 and override["result"]["reused"]  # the same run: same key


def test_missing_pyarrow_is_a_dry_run_finding_naming_the_extra(
    cwd: Path, capsys, monkeypatch: pytest.MonkeyPatch
):
    (cwd / "rows.parquet").write_bytes(b"PAR1 not read: pyarrow is missing PAR1")
    blend = write_blend(cwd, [{"name": "dapo", "path": "rows.parquet"}])
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError
    code, plan = run_json(
        cwd, capsys, "--dry-run", f"blend_path={blend}", f"output_dir={cwd / 'out'}"
    )
    [f] = [f for f in plan["findings"] if f["severity"] == "error"]
    assert code == 1 and "needs pyarrow" in f["message"]
    assert "pip install 'nemo-rl-steps[parquet]'" in f["fix"]
    assert f["path"] == str(cwd / "rows.parquet") and not (cwd / "out").exists()
