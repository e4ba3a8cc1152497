"""JSONL artifacts: bad input becomes findings with locations; shards and manifests are read."""

from __future__ import annotations

import json
import os
import resource

import pytest

from catalog.contracts import validate_artifact
from catalog.contracts.jsonl import loads, scan_range, strict_loads

GOOD = {"prompt": "q", "chosen": "a", "rejected": "b"}


def write_lines(path, lines):
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def line(obj) -> bytes:
    return json.dumps(obj).encode()


def errors(report):
    return [(f.code, f.line) for f in report.findings if f.is_error]


def test_invalid_json_on_a_line_is_reported_with_its_line(tmp_path):
    p = write_lines(tmp_path / "d.jsonl", [line(GOOD), b'{"prompt": "q",', line(GOOD)])
    report = validate_artifact("preference_jsonl", p)
    assert errors(report) == [("E-JSONL", 2)]
    assert report.rows == 3 and report.bad_rows == 1
    assert "invalid JSON" in report.findings[0].message


def test_non_utf8_bytes_are_reported_with_line_and_column(tmp_path):
    p = write_lines(tmp_path / "d.jsonl", [line(GOOD), b'{"prompt": "\xff"}'])
    report = validate_artifact("training_jsonl", p)
    assert errors(report) == [("E-JSONL", 2)]
    assert "not UTF-8" in report.findings[0].message and "0xff" in report.findings[0].message


def test_non_object_rows_are_reported(tmp_path):
    p = write_lines(tmp_path / "d.jsonl", [b"[1, 2]", b'"text"'])
    assert errors(validate_artifact("training_jsonl", p)) == [("E-JSONL", 1), ("E-JSONL", 2)]


def test_empty_file_is_an_error(tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_bytes(b"")
    report = validate_artifact("training_jsonl", p)
    assert not report.ok and report.findings[0].code == "E-JSONL"
    assert "empty" in report.findings[0].message


def test_a_100_mb_line_is_skipped_in_bounded_memory_and_later_lines_still_checked(tmp_path):
    p = tmp_path / "big.jsonl"
    with open(p, "wb") as f:
        f.write(line(GOOD) + b"\n")
        f.write(b'{"prompt": "' + b"x" * (100 << 20) + b'"}\n')
        f.write(b'{"prompt": "q", "chosen": "a", "rejected": "a"}\n')
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = scan_range(p, None, max_line=8 << 20)
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert [(f.code, f.line) for f in res.findings] == [("E-JSONL", 2)]
    assert "line too long" in res.findings[0].message
    assert res.lines == 3
    assert grew_mb < 60  # the 100 MB line was never held whole
    report = validate_artifact("preference_jsonl", p)  # default cap (64 MiB) also skips it
    assert errors(report) == [("E-JSONL", 2), ("E-DPO-ROW", 3)]


def test_folder_without_shards_is_an_error(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    report = validate_artifact("training_jsonl", tmp_path)
    assert [f.code for f in report.findings] == ["E-JSONL"]
    assert "no *.jsonl" in report.findings[0].message


def test_symlink_loop_is_reported_not_crashed(tmp_path):
    loop = tmp_path / "loop.jsonl"
    os.symlink(loop, loop)
    report = validate_artifact("training_jsonl", loop)
    assert not report.ok and "symlink loop" in report.findings[0].message
    shards = tmp_path / "shards"
    shards.mkdir()
    write_lines(shards / "a.jsonl", [line(GOOD)])
    os.symlink(shards / "b.jsonl", shards / "b.jsonl")
    report = validate_artifact("preference_jsonl", shards)
    assert report.rows == 1
    assert [(f.code, f.path) for f in report.findings] == [("E-JSONL", str(shards / "b.jsonl"))]


def test_folder_of_shards_is_read_recursively_in_sorted_order_skipping_hidden(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / ".staging").mkdir()
    write_lines(tmp_path / "a.jsonl", [line(GOOD)])
    write_lines(tmp_path / "b" / "c.jsonl", [line(GOOD), line({"prompt": "q"})])
    write_lines(tmp_path / ".staging" / "x.jsonl", [b"{broken"])
    report = validate_artifact("preference_jsonl", tmp_path)
    assert report.files == 2 and report.rows == 3
    assert [(f.path, f.line) for f in report.findings] == [(str(tmp_path / "b" / "c.jsonl"), 2)]


def test_rl_prep_manifest_lists_the_shards_and_their_row_counts(tmp_path):
    out = tmp_path / "out"
    (out / "train").mkdir(parents=True)
    write_lines(out / "train" / "shard_000000.jsonl", [line(GOOD), line(GOOD)])
    write_lines(out / "stray.jsonl", [b"{broken"])  # not in the manifest: not read
    manifest = {
        "splits": {
            "train": {"shards": [{"path": "train/shard_000000.jsonl", "rows": 2}]},
            "validation": {"shards": [{"path": "validation/shard_000000.jsonl", "rows": 1}]},
        }
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    report = validate_artifact("preference_jsonl", out)
    assert report.rows == 2 and report.files == 1
    assert [f.code for f in report.findings] == ["E-JSONL"]
    assert "validation/shard_000000.jsonl does not exist" in report.findings[0].message
    manifest["splits"].pop("validation")
    manifest["splits"]["train"]["shards"][0]["rows"] = 3
    (out / "manifest.json").write_text(json.dumps(manifest))
    report = validate_artifact("preference_jsonl", out / "manifest.json")
    assert [f.code for f in report.findings] == ["E-JSONL"]
    assert "manifest says 3 rows, the shard has 2" in report.findings[0].message


def test_parallel_scan_reports_the_same_lines_and_counts_as_a_serial_scan(tmp_path):
    p = tmp_path / "d.jsonl"
    lines = [line(GOOD)] * 3000
    for bad in (7, 1500, 2999):
        lines[bad - 1] = line({"prompt": "q", "chosen": "a", "rejected": "a"})
    write_lines(p, lines)
    from catalog.contracts.jsonl import Source
    from catalog.contracts.validation import scan_jsonl

    serial = scan_jsonl([Source(p)], "preference_rows", {}, workers=1)
    parallel = scan_jsonl([Source(p)], "preference_rows", {}, workers=2, chunk_bytes=40_000)
    assert [f.line for f in parallel.findings] == [f.line for f in serial.findings] == [7]
    assert [f.message for f in parallel.findings] == [f.message for f in serial.findings]
    assert "3 rows: " in serial.findings[0].message
    assert "first at lines 7, 1500, 2999." in serial.findings[0].message
    assert parallel.errors == serial.errors == 1
    assert (parallel.rows, parallel.bad_rows) == (serial.rows, serial.bad_rows) == (3000, 3)


def test_only_max_errors_findings_are_kept_but_all_are_counted(tmp_path):
    p = write_lines(tmp_path / "d.jsonl", [b"{"] * 50)
    report = validate_artifact("training_jsonl", p, max_errors=5)
    assert len(report.findings) == 5 and report.errors == 50 and report.bad_rows == 50


def test_the_fast_line_decoder_accepts_and_returns_what_the_standard_library_does():
    lines = [
        b'{"a": 1, "a": 2}',
        b'{"n": 123456789012345678901234567890}',
        b'{"x": NaN, "y": -Infinity}',
        b'{"s": "\\ud800", "t": "\\u00e9\xc3\xa9"}',
        b'{"f": -0.0, "g": 1e400, "h": 0.1}',
    ]
    for line in lines:
        assert repr(loads(line)) == repr(strict_loads(line))
    for bad in (b'{"a": 1} x', b'{"a": 1', b'{"a": "\xff"}'):
        with pytest.raises(ValueError):
            strict_loads(bad)
        with pytest.raises(ValueError):
            loads(bad)
