"""The one helper each for atomic writes, did-you-mean, YAML locations and syntax errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from catalog.atomic_write import open_atomic, write_atomic
from catalog.did_you_mean import close_keys, did_you_mean, with_suggestion
from catalog.errors import StepsError
from catalog.syntax_errors import yaml_error
from catalog.tomlfile import load_toml
from catalog.yamlfile import compose, file_key, key_lines, top_level_lines


def test_atomic_write_replaces_the_whole_file_and_leaves_no_temp(tmp_path: Path):
    path = tmp_path / "sub" / "out.txt"
    write_atomic(path, "one\n")
    write_atomic(path, "two\n")
    assert path.read_text() == "two\n"
    write_atomic(path, b"\x00bytes")
    assert path.read_bytes() == b"\x00bytes"
    assert [p.name for p in path.parent.iterdir()] == ["out.txt"]


def test_a_failed_atomic_write_keeps_the_old_file_and_no_temp(tmp_path: Path):
    path = tmp_path / "out.jsonl"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), open_atomic(path) as fh:
        fh.write("half a file")
        raise RuntimeError("disk full")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_did_you_mean_has_one_wording():
    assert did_you_mean("trian", ["train", "eval"]) == "did you mean train?"
    assert did_you_mean("zzz", ["train"], otherwise="one of: train") == "one of: train"
    assert with_suggestion("trian", ["train"], "see list") == "did you mean train? see list"
    assert with_suggestion("zzz", ["train"], "see list") == "see list"


def test_close_keys_fall_back_to_keys_with_the_same_leaf():
    keys = ["policy.lr", "policy.model_name", "optim.weight_decay"]
    assert close_keys("policy.lrr", keys)[0] == "policy.lr"
    assert "optim.weight_decay" in close_keys("opt.weight_decay", keys)


def test_key_lines_cover_nested_keys_and_list_items_last_duplicate_wins():
    node = compose("a:\n  b: 1\n  c:\n    - x\n    - y: 2\na2: 3\na2: 4\n")
    lines = key_lines(node)
    assert lines[("a", "b")] == 2 and lines[("a", "c", 1)] == 5 and lines[("a", "c", 1, "y")] == 5
    assert lines[("a2",)] == 7
    assert top_level_lines(node, first_line=2) == {"a": 2, "a2": 8}


def test_file_key_finds_a_dotted_key_and_its_value_node(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("data:\n  train:\n    - path: a\n    - path: ???\n")
    line, node = file_key(path, ["data", "train", "1", "path"])
    assert line == 4 and node.value == "???"
    assert file_key(path, ["data", "nope"]) == (None, None)
    assert file_key(tmp_path / "absent.yaml", ["a"]) == (None, None)


def test_syntax_errors_are_setup_errors_at_the_parsers_line(tmp_path: Path):
    with pytest.raises(yaml.YAMLError) as y:
        yaml.safe_load("a: 1\nb: [unclosed\n")
    err = yaml_error(y.value, tmp_path / "f.yaml", "E-X-YAML", first_line=2)
    assert (err.finding.line, err.exit_code) == (y.value.problem_mark.line + 2, 2)
    assert err.finding.message.startswith("invalid YAML: ")
    bad = tmp_path / "f.toml"
    bad.write_text("a = 1\nb = \n")
    with pytest.raises(StepsError) as t:
        load_toml(bad, code="E-X-TOML")
    assert (t.value.finding.code, t.value.finding.line, t.value.exit_code) == ("E-X-TOML", 2, 2)
    assert "(at line" not in t.value.finding.message
