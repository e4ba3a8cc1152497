"""`check` run twice in one process sees what changed between the two runs (files rewritten
within one mtime tick, environment variables, resolvers, a copy of a step elsewhere): each test
changes one such thing between two checks and expects the second check to see it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from omegaconf import OmegaConf
from test_content_memo import rewrite_in_the_same_tick

from runners.check import check_catalog

REPO = Path(__file__).resolve().parent.parent
DPO = Path("rl/nemo_rl/dpo")


def dpo_root(dest: Path, extra: str) -> Path:
    """A root holding the DPO step, with `extra` as its config/extra.yaml."""
    shutil.copytree(REPO / "steps" / DPO, dest / DPO, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "catalog" / "types.toml", dest / "types.toml")
    (dest / DPO / "config" / "extra.yaml").write_text(extra)
    return dest


def config_findings(root: Path) -> list[tuple[str, str, str | None]]:
    """(code, path relative to the root, key) of every finding about a config file."""
    found = check_catalog([root], include_builtin=False).findings
    return [
        (f.code, os.path.relpath(f.path, root), f.key)
        for f in found
        if f.path and "/config/" in f.path
    ]


EXTRA = str(DPO / "config" / "extra.yaml")


def test_a_config_whose_parent_is_rewritten_in_the_same_tick_is_checked_again(tmp_path):
    root = dpo_root(tmp_path / "cat", "defaults: parts/base.yaml\nc: ${a}\n")
    parent = root / DPO / "config" / "parts" / "base.yaml"
    parent.parent.mkdir()
    parent.write_text("a: 1\nb: 2\n")
    assert config_findings(root) == []
    rewrite_in_the_same_tick(parent, "z: 1\nb: 2\n")
    assert config_findings(root) == [("E-CONFIG-INTERPOLATION", EXTRA, "c")]


def test_the_environment_variables_a_config_reads_are_read_again(tmp_path, monkeypatch):
    root = dpo_root(
        tmp_path / "cat", "a: ${oc.env:PLANTED_VAR}\nn: ${oc.decode:${oc.env:PLANTED_NUM,1}}\n"
    )
    monkeypatch.delenv("PLANTED_VAR", raising=False)
    monkeypatch.setenv("PLANTED_NUM", "2")
    assert config_findings(root) == [("W-CONFIG-ENV", EXTRA, "a")]
    monkeypatch.setenv("PLANTED_VAR", "set")
    assert config_findings(root) == []
    monkeypatch.setenv("PLANTED_VAR", "set otherwise")  # only whether it is set counts here
    assert config_findings(root) == []
    monkeypatch.setenv("PLANTED_NUM", "[1")  # passed to another resolver: its value counts
    assert config_findings(root) == [("E-CONFIG-INTERPOLATION", EXTRA, "n")]


def test_a_resolver_registered_between_two_checks_is_used(tmp_path):
    root = dpo_root(tmp_path / "cat", "r: ${planted_resolver:1}\n")
    assert config_findings(root) == [("E-CONFIG-INTERPOLATION", EXTRA, "r")]
    OmegaConf.register_new_resolver("planted_resolver", lambda x: x)
    try:
        assert config_findings(root) == []
    finally:
        OmegaConf.clear_resolver("planted_resolver")
    assert config_findings(root) == [("E-CONFIG-INTERPOLATION", EXTRA, "r")]


def test_a_copy_of_a_step_in_another_folder_has_findings_that_name_its_own_files(tmp_path):
    one = dpo_root(tmp_path / "one", "a: ${oc.env:PLANTED_UNSET}\n")
    two = tmp_path / "two"
    shutil.copytree(one, two)
    first = check_catalog([one], include_builtin=False).findings
    second = check_catalog([two], include_builtin=False).findings
    assert [f.path.replace(str(one), str(two)) if f.path else None for f in first] == [
        f.path for f in second
    ]
    assert any(f.code == "W-CONFIG-ENV" and f.path == str(two / EXTRA) for f in second)
