"""Files parsed once per process (`catalog.content_memo`): an edit is always seen, even one that
keeps the size, inode and mtime (a rewrite within one clock tick), and what a caller gets is its
own copy. The one engine's policies: a copy strategy, keeping only what is asked for twice, and
bounds in entries and bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from catalog.content_memo import SHARED, ContentMemo
from catalog.errors import StepsError
from catalog.model_errors import file_lines, line_of
from catalog.patterns import parse_pattern
from catalog.tomlfile import load_toml
from catalog.types import load_types


def rewrite_in_the_same_tick(path: Path, text: str) -> None:
    """Replace the file's text in place keeping its size, inode and mtime: what a stat-keyed
    cache cannot tell from no edit at all."""
    before = path.stat()
    assert len(text.encode()) == before.st_size, "the plant must keep the size"
    with open(path, "r+b") as fh:
        fh.write(text.encode())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


def test_a_toml_file_rewritten_within_one_mtime_tick_is_parsed_again(tmp_path):
    path = tmp_path / "step.toml"
    path.write_text('[step]\nid = "a/one"\n')
    assert load_toml(path) == {"step": {"id": "a/one"}}
    rewrite_in_the_same_tick(path, '[step]\nid = "b/two"\n')
    assert load_toml(path) == {"step": {"id": "b/two"}}


def test_a_parsed_document_changed_by_its_caller_does_not_change_the_next_read(tmp_path):
    path = tmp_path / "codes.toml"
    path.write_text('[E-X]\nupstream = ["a"]\n')
    first = load_toml(path)
    first["E-X"]["upstream"].append("b")
    first["added"] = 1
    assert load_toml(path) == {"E-X": {"upstream": ["a"]}}


def test_a_toml_syntax_error_fixed_in_the_same_tick_parses(tmp_path):
    path = tmp_path / "step.toml"
    path.write_text("[step\nid = 12\n")
    with pytest.raises(StepsError) as err:
        load_toml(path, code="E-MANIFEST-TOML")
    assert err.value.finding.line == 1
    rewrite_in_the_same_tick(path, "[step]\nid = 1\n")
    assert load_toml(path) == {"step": {"id": 1}}


def test_key_lines_of_a_file_rewritten_within_one_mtime_tick_are_its_new_lines(tmp_path):
    for name, old, new in (
        ("a.toml", "[a]\nx = 1\ny = 2\n", "[a]\ny = 2\nx = 1\n"),
        ("a.yaml", "a:\n  x: 1\n  y: 2\n", "a:\n  y: 2\n  x: 1\n"),
    ):
        path = tmp_path / name
        path.write_text(old)
        assert line_of(path, "a", "x") == 2
        lines = file_lines(path)
        lines[("a", "x")] = 99  # the caller's copy
        assert file_lines(path)[("a", "x")] == 2
        rewrite_in_the_same_tick(path, new)
        assert line_of(path, "a", "x") == 3, name


TYPES = '[alpha]\ndescription = "a"\nlayout = "file"\n'


def test_types_toml_rewritten_within_one_mtime_tick_gives_the_new_graph(tmp_path):
    path = tmp_path / "types.toml"
    path.write_text(TYPES)
    graph = load_types(path)
    assert list(graph.types) == ["alpha"] and graph.findings == []
    graph.types.clear()  # the caller's copy
    assert list(load_types(path).types) == ["alpha"]
    rewrite_in_the_same_tick(path, TYPES.replace("alpha", "gamma").replace('"file"', '"fild"'))
    graph = load_types(path)
    assert list(graph.types) == ["gamma"]
    assert [(f.code, f.line) for f in graph.findings] == [("E-TYPES-SCHEMA", 3)]


def test_the_same_types_toml_at_two_paths_names_each_path_in_its_findings(tmp_path):
    bad = TYPES.replace('"file"', '"fild"')
    paths = [tmp_path / "one" / "types.toml", tmp_path / "two" / "types.toml"]
    for path in paths:
        path.parent.mkdir()
        path.write_text(bad)
    for path in paths:
        graph = load_types(path)
        assert graph.path == path
        assert [f.path for f in graph.findings] == [str(path)]


def test_the_memo_keeps_at_most_its_entries_and_bytes_least_recently_used_leaving_first():
    made: list[str] = []

    def make(key: str):
        return lambda: made.append(key) or [key]

    memo = ContentMemo(max_entries=2, max_bytes=1 << 20)
    for key in ("a", "b", "a", "c", "a", "b"):
        assert memo.get(key, make(key)) == [key]
    assert made == ["a", "b", "c", "b"]  # "b" left when "c" came; "a" was used since
    assert len(memo) == 2
    small = ContentMemo(max_entries=100, max_bytes=4000)
    small.get("big", lambda: "x" * 2000)  # over a quarter of the bound: never kept
    assert len(small) == 0


PATTERN = """---
id: planted
title: A planted pattern
tags: [t]
triggers: [x]
steps: [a/one]
confidence: high
---
## When to apply
x
## What to do
x
## Exceptions
x
## References
x
"""


def test_a_pattern_rewritten_within_one_mtime_tick_or_checked_against_other_steps_is_judged_again(
    tmp_path,
):
    path = tmp_path / "planted.md"
    path.write_text(PATTERN)
    assert parse_pattern(path, {"a/one"})[1] == []
    missing = parse_pattern(path, {"a/two"})[1]  # the same text, other step ids
    assert [f.code for f in missing] == ["E-PATTERN-STEP"]
    rewrite_in_the_same_tick(path, PATTERN.replace("high", "huge"))
    found = parse_pattern(path, {"a/one"})[1]
    assert [f.code for f in found] == ["E-PATTERN-CONFIDENCE"]
    elsewhere = tmp_path / "other" / "planted.md"
    elsewhere.parent.mkdir()
    elsewhere.write_text(path.read_text())
    assert [f.path for f in parse_pattern(elsewhere, {"a/one"})[1]] == [str(elsewhere)]


class Counted:
    """A copy strategy that counts its copies (a deep copy of lists of lists)."""

    def __init__(self) -> None:
        self.copies = 0

    def __call__(self, value: list) -> list:
        self.copies += 1
        return [list(item) for item in value]


def test_a_seen_twice_memo_keeps_nothing_for_a_key_asked_once_and_copies_from_the_second_on():
    made: list[int] = []
    copy = Counted()
    memo = ContentMemo(copy=copy, seen_twice=True)

    def make():
        made.append(1)
        return [["a"]]

    first = memo.get("k", make)
    assert (len(made), len(memo), copy.copies) == (1, 0, 0)  # a one-shot command copies nothing
    second = memo.get("k", make)
    assert (len(made), len(memo), copy.copies) == (2, 1, 1)  # the pristine copy
    second[0].append("mutated")
    third = memo.get("k", make)
    assert (len(made), copy.copies) == (2, 2) and third == [["a"]] == first
    assert third is not second and third[0] is not second[0]


def test_a_seen_twice_memo_forgets_the_keys_it_saw_once_when_they_reach_eight_times_its_entries():
    memo = ContentMemo(max_entries=2, copy=list, seen_twice=True)
    for key in range(16):
        memo.get(key, lambda: [])
    memo.get(16, lambda: [])  # the 17th new key: the 16 seen once are forgotten
    memo.get(0, lambda: [])
    assert len(memo) == 0
    memo.get(16, lambda: [])
    assert len(memo) == 1


def test_a_memo_with_a_copy_strategy_is_bounded_by_the_size_its_callers_name():
    memo = ContentMemo(max_entries=100, max_bytes=4000, copy=list)
    memo.get("big", lambda: [1], size=1001)  # over a quarter of the bound: never kept
    assert len(memo) == 0
    for key in ("a", "b", "c", "d"):
        memo.get(key, lambda: [1], size=lambda value: 1000)
    assert len(memo) == 4
    memo.get("a", lambda: [2])  # a hit: "a" is now the most recently used
    memo.get("e", lambda: [1], size=1000)  # over 4000 bytes: "b" leaves first
    assert memo.get("b", lambda: ["made again"]) == ["made again"]
    assert memo.get("a", lambda: [2]) == [1]


def test_a_shared_memo_hands_out_the_kept_value_itself():
    memo = ContentMemo(copy=SHARED)
    value = memo.get("k", lambda: {"a": 1})
    assert memo.get("k", lambda: {"a": 2}) is value


@pytest.mark.parametrize("copy", [None, list], ids=["pickled", "copied"])
def test_a_kept_value_its_caller_finds_stale_is_made_again_and_replaces_the_kept_one(copy):
    memo = ContentMemo(copy=copy)
    current = ["v1"]

    def fresh() -> list:
        return list(current)

    def valid(kept: list) -> bool:
        return kept == current

    assert memo.get("k", fresh, valid=valid) == ["v1"]
    current[0] = "v2"  # what the value rests on beyond its key changed
    assert memo.get("k", fresh, valid=valid) == ["v2"]
    assert memo.get("k", lambda: ["not made"], valid=valid) == ["v2"]
    assert len(memo) == 1
