"""A user's own config on top of a shipped step config: `defaults:` by name, `init`, `cp`.

As a NeMo-RL user meets it: a YAML in their project folder that inherits a recipe and changes
a few keys, checked with `run STEP -c my.yaml --dry-run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from run_fixtures import clean_env, dry_run, fake_checkout, steps_cli

from catalog.discovery import BUILTIN_ROOT
from runners.config.compiler import compile_config, load_config

DPO = BUILTIN_ROOT / "rl" / "nemo_rl" / "dpo" / "config"
RLVR = BUILTIN_ROOT / "rl" / "nemo_rl" / "rlvr" / "config"


def _config_of(doc: dict) -> dict:
    assert doc["ok"], doc["findings"]
    return yaml.safe_load(doc["config"]) if isinstance(doc["config"], str) else doc["config"]


def test_bare_name_inherits_the_config_of_the_step_being_run(tmp_path, monkeypatch, capsys):
    doc = dry_run(monkeypatch, capsys, tmp_path, "rl/nemo_rl/dpo", "defaults: tiny\n")
    shipped = compile_config(DPO / "tiny.yaml").config
    assert doc["ok"], doc["findings"]
    mine = load_config(tmp_path / "cfg.yaml", DPO).config
    assert mine == shipped


@pytest.mark.parametrize("entry", ["rl/nemo_rl/dpo:tiny", "dpo:tiny", "dpo:tiny.yaml"])
def test_step_qualified_name_inherits_from_any_folder(tmp_path, entry):
    mine = tmp_path / "my_dpo.yaml"
    mine.write_text(f"defaults: {entry}\ndpo:\n  val_period: 10\n")
    compiled = load_config(mine)  # no step being run: the name alone says which
    assert compiled.config.dpo.val_period == 10
    assert compiled.config.policy == load_config(DPO / "tiny.yaml").config.policy
    assert compiled.sources[-2:] == [DPO / "tiny.yaml", mine]


def test_a_file_beside_the_declaring_file_keeps_meaning_the_file(tmp_path):
    (tmp_path / "tiny").write_text("mine_only: 1\n")  # NeMo-RL reads `tiny` as this path
    (tmp_path / "default.yaml").write_text("also_mine: 2\n")
    (tmp_path / "a.yaml").write_text("defaults: tiny\n")
    (tmp_path / "b.yaml").write_text("defaults: default.yaml\n")
    assert dict(load_config(tmp_path / "a.yaml", DPO).config) == {"mine_only": 1}
    assert dict(load_config(tmp_path / "b.yaml", DPO).config) == {"also_mine": 2}


def test_unknown_names_fail_at_the_defaults_line(tmp_path, monkeypatch, capsys):
    doc = dry_run(monkeypatch, capsys, tmp_path, "rl/nemo_rl/dpo", "x: 1\ndefaults: tinyy\n")
    (f,) = doc["findings"]
    assert f["code"] == "E-CONFIG-DEFAULTS" and f["line"] == 2
    assert "STEP:CONFIG" in f["fix"]
    doc = dry_run(monkeypatch, capsys, tmp_path, "rl/nemo_rl/dpo", "defaults: dpo:nosuch\n")
    (f,) = doc["findings"]
    assert f["code"] == "E-CONFIG-DEFAULTS" and f["line"] == 1
    assert "rl/nemo_rl/dpo:tiny" in f["fix"]


@pytest.fixture
def cli(monkeypatch, capsys, tmp_path):
    def call(*argv: str):
        return steps_cli(monkeypatch, capsys, *argv, cwd=tmp_path, env=clean_env(tmp_path))

    return call


def test_cp_copies_a_step_config_that_still_compiles_to_the_same(tmp_path, cli):
    proc = cli("cp", "rl/nemo_rl/rlvr:nemo_gym_tiny", "proj/")
    assert proc.returncode == 0, proc.stderr
    copy = tmp_path / "proj" / "nemo_gym_tiny.yaml"
    assert "defaults: rl/nemo_rl/rlvr:nemo_gym" in copy.read_text()
    assert load_config(copy).config == load_config(RLVR / "nemo_gym_tiny.yaml").config


def test_cp_and_init_refuse_to_overwrite_without_force(tmp_path, cli):
    (tmp_path / "mine.yaml").write_text("keep: me\n")
    for command in ("cp", "init"):
        proc = cli(command, "dpo:tiny", "mine.yaml")
        assert proc.returncode == 2 and "E-CONFIG-EXISTS" in proc.stderr, proc.stderr
        assert (tmp_path / "mine.yaml").read_text() == "keep: me\n"
    assert cli("cp", "dpo:tiny", "mine.yaml", "--force").returncode == 0
    assert load_config(tmp_path / "mine.yaml").config == load_config(DPO / "tiny.yaml").config
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_init_writes_a_config_that_inherits_and_runs(tmp_path, cli, monkeypatch, capsys):
    proc = cli("init", "rlvr:nemo_gym_tiny", "--json")
    assert proc.returncode == 0, proc.stderr
    path = Path(json.loads(proc.stdout)["path"])
    assert path == tmp_path / "my_nemo_gym_tiny.yaml"
    assert load_config(path).config == load_config(RLVR / "nemo_gym_tiny.yaml").config
    checkout = fake_checkout(tmp_path / "nemo-rl")
    proc = cli("run", "rlvr", "-c", str(path), "--nemo-rl", str(checkout), "--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cp_of_an_unknown_config_names_the_ones_there_are(cli):
    proc = cli("cp", "dpo:tinyy")
    assert proc.returncode == 2 and "E-CONFIG-NOT-FOUND" in proc.stderr
    assert "tiny" in proc.stderr and "Traceback" not in proc.stderr
