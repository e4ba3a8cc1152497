"""Relative data paths in a config file are NeMo-RL's: it opens them from its working directory,
the checkout root (v0.7.0 nemogym_dataset.py:35), so the run's config.yaml keeps them as written
and preflight judges them there, never from the config file's folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from run_fixtures import PAIR, clean_env, dpo_step, fake_checkout, only_run_dir, steps_cli

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def lab(tmp_path: Path, monkeypatch, capsys):
    """A fake DPO step, a fake NeMo-RL checkout, and `run` in-process with a clean environment."""
    catalog = tmp_path / "catalog"
    step = dpo_step(catalog)
    checkout = fake_checkout(tmp_path / "nemo-rl")
    env = clean_env(tmp_path)
    mine = tmp_path / "mine"
    (mine / "pairs").mkdir(parents=True)
    (mine / "pairs" / "train.jsonl").write_text(json.dumps(PAIR) + "\n", encoding="utf-8")

    def run(config_text: str, *extra: str, nemo_rl: bool = True):
        (mine / "cfg.yaml").write_text(
            f"defaults: {step / 'config' / 'tiny.yaml'}\n" + config_text, encoding="utf-8"
        )
        argv = ["run", "rl/fake_dpo", "--catalog", str(catalog), "-c", str(mine / "cfg.yaml")]
        argv += ["--runs-dir", str(tmp_path / "runs"), "--dry-run", "--json", *extra]
        argv += ["--nemo-rl", str(checkout)] if nemo_rl else []
        proc = steps_cli(monkeypatch, capsys, *argv, cwd=tmp_path, env=env)
        return json.loads(proc.stdout)

    return run, mine, checkout, tmp_path


def _on(out: dict, key: str) -> list[dict]:
    return [f for f in out["findings"] if f.get("key") == key]


def test_path_found_only_beside_the_config_is_one_error_with_the_absolute_path(lab) -> None:
    run, mine, checkout, _ = lab
    out = run("data:\n  train:\n    data_path: pairs/train.jsonl\n")
    found = _on(out, "data.train.data_path")
    assert [f["code"] for f in found] == ["E-INPUT-RELATIVE"]
    assert str(checkout / "pairs" / "train.jsonl") in found[0]["message"]
    assert f"data.train.data_path: {mine / 'pairs' / 'train.jsonl'}" in found[0]["fix"]
    assert found[0]["path"] == str(mine / "cfg.yaml") and found[0]["line"] == 4


def test_path_that_exists_under_the_checkout_is_kept_as_written(lab) -> None:
    run, _, checkout, tmp_path = lab
    (checkout / "pairs").mkdir()
    (checkout / "pairs" / "train.jsonl").write_text(json.dumps(PAIR) + "\n", encoding="utf-8")
    out = run("data:\n  train:\n    data_path: pairs/train.jsonl\n", "--keep")
    assert _on(out, "data.train.data_path") == []
    assert out["config"]["data"]["train"]["data_path"] == "pairs/train.jsonl"
    written = only_run_dir(tmp_path / "runs", "rl/fake_dpo") / "config.yaml"
    config = yaml.safe_load(written.read_text(encoding="utf-8"))
    assert config["data"]["train"]["data_path"] == "pairs/train.jsonl"


def test_path_missing_everywhere_is_input_missing_where_nemo_rl_looks(lab) -> None:
    run, _, checkout, _ = lab
    out = run("data:\n  train:\n    data_path: nowhere/train.jsonl\n")
    found = _on(out, "data.train.data_path")
    assert [f["code"] for f in found] == ["E-INPUT-MISSING"]
    assert str(checkout / "nowhere" / "train.jsonl") in found[0]["message"]


def test_without_a_checkout_a_relative_path_is_a_warning_naming_the_absolute_path(lab) -> None:
    run, mine, _, _ = lab
    out = run("data:\n  train:\n    data_path: pairs/train.jsonl\n", nemo_rl=False)
    found = _on(out, "data.train.data_path")
    assert [(f["code"], f["severity"]) for f in found] == [("W-INPUT-RELATIVE", "warning")]
    assert str(mine / "pairs" / "train.jsonl") in found[0]["fix"]


def test_override_paths_are_still_read_from_the_current_directory(lab) -> None:
    run, mine, _, _ = lab
    out = run("", "data.train.data_path=mine/pairs/train.jsonl")
    assert _on(out, "data.train.data_path") == []
    assert out["config"]["data"]["train"]["data_path"] == str(mine / "pairs" / "train.jsonl")


@pytest.mark.parametrize(
    ("step", "config"),
    [("dpo", "tiny"), ("rlvr", "tiny"), ("rlvr", "nemo_gym_tiny"), ("rlhf", "tiny")],
)
def test_shipped_tiny_configs_name_their_data_from_steps_home(
    tmp_path: Path, monkeypatch, capsys, step: str, config: str
) -> None:
    checkout = fake_checkout(tmp_path / "nemo-rl")
    argv = ["run", f"rl/nemo_rl/{step}", "-c", config, "--nemo-rl", str(checkout)]
    argv += ["--runs-dir", str(tmp_path / "runs"), "--dry-run", "--json"]
    env = clean_env(tmp_path)
    env.pop("STEPS_HOME", None)
    out = json.loads(steps_cli(monkeypatch, capsys, *argv, cwd=tmp_path, env=env).stdout)
    data = REPO / "steps" / "rl" / "nemo_rl" / step / "data"
    for split in ("train", "validation"):
        key = f"data.{split}.data_path"
        assert [f["code"] for f in _on(out, key)] == []
        value = out["config"]["data"][split]["data_path"]
        assert Path(value).parent == data and Path(value).is_file()
