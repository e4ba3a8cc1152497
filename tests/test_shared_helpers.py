"""The one helper each for atomic writes, did-you-mean, YAML and TOML locations, syntax errors
and pydantic errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from catalog.atomic_write import open_atomic, write_atomic
from catalog.did_you_mean import close_keys, did_you_mean, with_suggestion
from catalog.errors import StepsError
from catalog.manifest import parse_manifest
from catalog.model_errors import error_from, file_lines, findings_from, key_path, line_of
from catalog.syntax_errors import yaml_error
from catalog.tomlfile import key_lines as toml_key_lines
from catalog.tomlfile import load_toml
from catalog.yamlfile import compose, file_key, key_lines


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


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[str | _Item]
    size: int


def test_toml_key_lines_point_at_keys_not_at_strings_that_hold_them():
    text = (
        'title = "size = 3"\n[t]\ndesc = """\nname = no\n"""\nname = "x"\n'
        "[[t.rows]]\nv = { a = 1, b = [2, { c = 3 }] }\n[[t.rows]]\nv = 2\n[t.rows.sub]\nw = 1\n"
        'list = [\n  "a", # note\n  "b",\n]\n"q.k" = 1\n'
    )
    lines = toml_key_lines(text)
    assert lines[("t", "name")] == 6 and ("t", "desc", "name") not in lines
    assert lines[("t", "rows", 0, "v", "b", 1, "c")] == 8
    assert lines[("t", "rows", 1, "v")] == 10 and lines[("t", "rows", 1, "sub", "w")] == 12
    assert lines[("t", "rows", 1, "sub", "list", 1)] == 15
    assert lines[("t", "rows", 1, "sub", "q.k")] == 17


def test_line_of_reads_toml_and_yaml_files_alike_and_falls_back_to_the_parent(tmp_path: Path):
    (tmp_path / "a.toml").write_text('[data]\ntrain = [\n  { path = "x" },\n]\n')
    (tmp_path / "a.yaml").write_text("data:\n  train:\n    - path: x\n")
    for name, want in (("a.toml", 3), ("a.yaml", 3)):
        assert line_of(tmp_path / name, "data", "train", 0, "path") == want
        assert line_of(file_lines(tmp_path / name), "data", "absent") == 1
    assert line_of(tmp_path / "missing.toml", "data") is None


def test_a_validation_error_becomes_findings_without_union_branch_names():
    data = {"items": ["a", {"nme": "b"}], "size": "big"}
    with pytest.raises(ValidationError) as info:
        _File.model_validate(data)
    lines = {("items", 1): 3, ("items", 1, "nme"): 4, ("size",): 5}
    found = findings_from(
        info.value, code="E-X", path="f.yaml", data=data, locate=lambda loc: line_of(lines, *loc)
    )
    keys = {f.key for f in found}
    assert "items.1.nme" in keys and "items.1.name" in keys and "size" in keys
    assert not any("_Item" in f.message or ".str" in f.key for f in found)
    err = error_from(
        info.value,
        code="E-X",
        path="f.yaml",
        data=data,
        fix="fix it",
        exit_code=2,
        locate=lambda loc: line_of(lines, *loc),
    )
    assert (err.finding.key, err.finding.line, err.exit_code) == ("items.1.nme", 4, 2)
    assert key_path(("items", 1, "_Item", "name"), data, missing=True) == ("items", 1, "name")


def test_a_manifest_schema_error_points_at_the_key_not_at_a_description_naming_it(tmp_path):
    path = tmp_path / "step.toml"
    path.write_text('[step]\nid = "a/b"\ndescription = "the colour of it"\ncolour = "red"\n')
    _, found = parse_manifest({"step": {"id": "a/b", "colour": "red"}}, path)
    hit = next(f for f in found if f.key == "step.colour")
    assert hit.line == 4
