"""What NeMo-RL reads is the input the user bound, or an error (issue 38).

A user DPO config that inherits NeMo-RL's own examples/configs/dpo.yaml keeps its
`data.train.dataset_name: HelpSteer3`; `--input train=MY_PAIRS` binds data.train.data_path, which
HelpSteer3 never reads (v0.7.0 preference_datasets/__init__.py:25-32, 64). The parent here has
that file's data section (written here, not copied), over this catalog's tiny DPO config.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pipeline_toys import steps_main

REPO = Path(__file__).resolve().parents[1]
DPO = REPO / "steps" / "rl" / "nemo_rl" / "dpo"
UPSTREAM_DATA = """\
data:
  train:
    dataset_name: HelpSteer3
    split: train
  validation:
    dataset_name: HelpSteer3
    split: validation
"""


def _user_config(tmp_path: Path, data: str = UPSTREAM_DATA) -> Path:
    parent = tmp_path / "examples" / "configs" / "dpo.yaml"
    parent.parent.mkdir(parents=True)
    parent.write_text(f"defaults: {DPO / 'config' / 'tiny.yaml'}\n{data}", encoding="utf-8")
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"defaults: {parent}\ndpo:\n  max_num_steps: 2\n", encoding="utf-8")
    return mine


def _dry_run(tmp_path: Path, config: Path, *extra: str) -> tuple[int, list[dict]]:
    pairs = tmp_path / "pairs.jsonl"
    shutil.copy(DPO / "data" / "tiny_train.jsonl", pairs)
    proc = steps_main(
        "run", "rl/nemo_rl/dpo", "-c", str(config), "--input", f"train={pairs}",
        "--dry-run", "--json", *extra, cwd=tmp_path,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def test_an_input_a_hub_dataset_would_ignore_is_an_error_with_the_override_that_reads_it(
    tmp_path: Path,
) -> None:
    code, findings = _dry_run(tmp_path, _user_config(tmp_path))
    found = [f for f in findings if f["code"] == "E-INPUT-IGNORED"]
    assert code == 1 and [f["key"] for f in found] == [
        "data.train.dataset_name",
        "data.validation.dataset_name",  # the tiny config's own validation file, ignored too
    ]
    assert "'HelpSteer3'" in found[0]["message"] and "pairs.jsonl" in found[0]["message"]
    assert found[0]["fix"].startswith("add data.train.dataset_name=BinaryPreferenceDataset")
    assert found[0]["path"].endswith("examples/configs/dpo.yaml")


def test_with_the_fix_applied_the_run_reads_the_bound_pairs(tmp_path: Path) -> None:
    mine = _user_config(tmp_path)
    fix = "data.train.dataset_name=BinaryPreferenceDataset"
    _, findings = _dry_run(tmp_path, mine, fix, "data.validation=null", "dpo.val_period=0")
    assert [f for f in findings if f["code"] == "E-INPUT-IGNORED"] == []


@pytest.mark.parametrize("name", ["BinaryPreferenceDataset", "PreferenceDataset"])
def test_a_class_that_reads_data_path_is_not_refused(tmp_path: Path, name: str) -> None:
    data = UPSTREAM_DATA.replace("HelpSteer3", name)
    _, findings = _dry_run(tmp_path, _user_config(tmp_path, data))
    assert [f for f in findings if f["code"] == "E-INPUT-IGNORED"] == []
