"""`validate` on hostile or careless input: a finding and exit 1 or 2, never exit 70 or a hang.

Deeply nested JSON, folders this user may not read, devices and named pipes (refused at once;
`<(command)` and a pipe on stdin are read once), byte order marks, compressed
files named .jsonl, and millions of bad rows (counted in bounded time past --max-errors).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_contracts_checkpoints import hf_folder, nemo_rl_step
from test_validate_cmd import GYM
from unreadable import unreadable

from catalog.contracts import validate_artifact
from catalog.contracts.jsonl import Source, scan_range
from catalog.contracts.validation import scan_jsonl
from steps.cli import main

REPO = Path(__file__).resolve().parents[1]
JSONL_TYPES = ("training_jsonl", "nemo_gym_jsonl", "preference_jsonl", "verifiable_prompt_jsonl")
DEEP = {
    "arrays": "[" * 100_000 + "]" * 100_000,
    "objects": '{"a":' * 50_000 + "1" + "}" * 50_000,
    # deeper than the json reader of every supported Python goes (3.13's reads 9,998 levels)
    "in_a_row": '{"messages": ' + "[" * 20_000 + "]" * 20_000 + "}",
}


def validate_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["validate", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("shape", sorted(DEEP))
@pytest.mark.parametrize("type_name", JSONL_TYPES)
def test_a_too_deeply_nested_row_is_a_finding_at_its_line_in_every_jsonl_type(
    tmp_path, capsys, type_name, shape
):
    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps(GYM) + "\n" + DEEP[shape] + "\n")
    code, doc = validate_json(capsys, type_name, str(p))
    assert code == 1
    deep = [f for f in doc["findings"] if f["line"] == 2]
    assert [f["code"] for f in deep] == ["E-JSONL"]
    assert "nested deeper than" in deep[0]["message"] and doc["rows"] == 2


def test_a_too_deeply_nested_config_json_is_a_checkpoint_finding(tmp_path, capsys):
    model = hf_folder(tmp_path / "model")
    (model / "config.json").write_text(DEEP["objects"])
    code, doc = validate_json(capsys, "hf_checkpoint", str(model))
    assert code == 1
    (finding,) = doc["findings"]
    assert finding["code"] == "E-HF-CHECKPOINT" and finding["location"].endswith("config.json")
    assert "nested deeper than" in finding["message"]


def test_too_deeply_nested_checkpoint_metadata_and_training_info_are_findings(tmp_path):
    step = nemo_rl_step(tmp_path, 1)
    (step / "training_info.json").write_text(DEEP["arrays"])
    (step / "policy/weights/iter_0000000/metadata.json").write_text(DEEP["objects"])
    report = validate_artifact("nemo_rl_megatron_checkpoint", tmp_path)
    assert sorted(f.path.rsplit("/", 1)[1] for f in report.findings) == [
        "metadata.json",
        "training_info.json",
    ]
    assert all("nested deeper than" in f.message for f in report.findings)


def test_a_folder_this_user_may_not_read_is_permission_denied_exit_2(tmp_path, capsys):
    folder = tmp_path / "rows"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps(GYM) + "\n")
    for type_name in ("nemo_gym_jsonl", "hf_checkpoint", "nemo_rl_checkpoint"):
        with unreadable(folder):
            assert main(["validate", type_name, str(folder)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"{folder}: E-INPUT-UNREADABLE cannot read the input: ")
        assert f"permission denied on {folder}\n" in err and "chmod" in err


def test_a_file_in_a_folder_this_user_may_not_search_is_permission_denied_not_missing(
    tmp_path, capsys
):
    folder = tmp_path / "locked"
    folder.mkdir()
    data = folder / "a.jsonl"
    data.write_text(json.dumps(GYM) + "\n")
    with unreadable(folder):
        assert main(["validate", "nemo_gym_jsonl", str(data)]) == 2
    err = capsys.readouterr().err
    assert "does not exist" not in err
    assert err.startswith(f"{data}: E-INPUT-UNREADABLE cannot read the input: ")
    assert f"permission denied on {folder}\n" in err


def validate_child(*argv: str) -> tuple[int, dict]:
    """`validate ... --json` in a child, so a hang fails the test instead of stalling it."""
    proc = subprocess.run(
        [sys.executable, "-m", "steps", "validate", *argv, "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return proc.returncode, json.loads(proc.stdout)


def test_a_named_pipe_is_refused_at_once_naming_it_and_what_to_do(tmp_path):
    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)  # no writer: opening it for reading would wait forever
    start = time.monotonic()
    code, doc = validate_child("training_jsonl", str(fifo))
    assert code == 2 and time.monotonic() - start < 30
    [f] = doc["findings"]
    assert f["code"] == "E-INPUT-KIND" and f["path"] == str(fifo)
    assert "is a named pipe (FIFO), not a regular file or a dataset folder" in f["message"]
    assert "copy the data into a regular file" in f["fix"] and "<(COMMAND)" in f["fix"]


def test_a_named_pipe_among_a_folders_shards_is_its_one_finding(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    os.mkfifo(folder / "a.jsonl")
    code, doc = validate_child("training_jsonl", str(folder))
    assert code == 1
    [f] = doc["findings"]
    assert f["path"] == str(folder / "a.jsonl") and "shard is a named pipe (FIFO)" in f["message"]


def test_a_pipe_on_stdin_is_read_once_and_validated(tmp_path):
    rows = (json.dumps(GYM) + "\n") * 3
    proc = subprocess.run(
        [sys.executable, "-m", "steps", "validate", "nemo_gym_jsonl", "/dev/stdin"],
        input=rows, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "3 rows in 1 file. OK" in proc.stdout


def test_process_substitution_still_validates_the_stream(tmp_path):
    data = tmp_path / "rows.jsonl.gz"
    data.write_bytes(gzip.compress((json.dumps(GYM) + "\n").encode() * 2))
    cmd = f"{sys.executable} -m steps validate nemo_gym_jsonl <(zcat {data})"
    proc = subprocess.run(["bash", "-c", cmd], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "2 rows in 1 file. OK" in proc.stdout


def test_a_byte_order_mark_is_one_error_where_the_reader_json_loads_each_line(tmp_path, capsys):
    p = tmp_path / "d.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + (json.dumps(GYM) + "\n").encode() * 2)
    code, doc = validate_json(capsys, "nemo_gym_jsonl", str(p))
    assert code == 1 and doc["rows"] == 2 and doc["bad_rows"] == 0
    (finding,) = doc["findings"]
    assert (finding["code"], finding["line"]) == ("E-JSONL-BOM", 1)
    assert "byte order mark" in finding["message"] and "without a BOM" in finding["fix"]


def test_a_byte_order_mark_is_a_warning_where_datasets_reads_the_rows(tmp_path, capsys):
    p = tmp_path / "d.jsonl"
    pair = {"prompt": "2+2?", "chosen": "4", "rejected": "5"}
    p.write_bytes(b"\xef\xbb\xbf" + (json.dumps(pair) + "\n").encode())
    code, doc = validate_json(capsys, "preference_jsonl", str(p))
    assert code == 0 and doc["rows"] == 1
    assert [f["code"] for f in doc["findings"]] == ["W-JSONL-BOM"]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_gzip_file_named_jsonl_is_one_finding_that_says_so(tmp_path, workers):
    p = tmp_path / "d.jsonl"
    p.write_bytes(gzip.compress(os.urandom(200_000)))
    report = validate_artifact("nemo_gym_jsonl", p, workers=workers)
    scan = scan_jsonl([Source(p)], "jsonl", {}, workers=workers, chunk_bytes=50_000)
    for findings in (report.findings, scan.findings):
        (finding,) = findings
        assert finding.code == "E-JSONL" and "is gzip-compressed" in finding.message
        assert "gunzip" in finding.fix


BAD_AND_ODD = [
    b"x",
    b"{",
    b'{"a": }',
    b"[1, 2]",
    b'"text"',
    b"",
    b'{"n": NaN}',
    b'{"n": -Infinity}',
    b'{"s": "\\ud800"}',
    b'{"f": 1e400}',
    b'{"f": 1' + b"0" * 400 + b".0}",
    b'{"t": "a\tb"}',
    b'{"a": 1} x',
    b'\x0c{"a": 1}',
    b'{"s": "\xff"}',
    b'  {"ok": true}  ',
    b'{"messages": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"prompt": "q", "chosen": "a", "rejected": "a"}',
]


@pytest.mark.parametrize("contract", ["jsonl", "preference_rows"])
def test_rows_past_max_errors_are_counted_exactly_as_when_all_are_reported(tmp_path, contract):
    p = tmp_path / "d.jsonl"
    p.write_bytes(b"\n".join(BAD_AND_ODD * 3) + b"\n")
    everything = scan_jsonl([Source(p)], contract, {}, max_errors=10**6, workers=1)
    for max_errors in (0, 1, 5):
        few = scan_jsonl([Source(p)], contract, {}, max_errors=max_errors, workers=1)
        assert (few.rows, few.bad_rows, few.blank, few.errors, few.warnings) == (
            everything.rows,
            everything.bad_rows,
            everything.blank,
            everything.errors,
            everything.warnings,
        )
        assert few.bad_by_code == everything.bad_by_code
        assert [f.line for f in few.findings if f.is_error] == [
            f.line for f in everything.findings if f.is_error
        ][:max_errors]


def test_warnings_past_max_errors_are_counted_not_kept(tmp_path, capsys):
    p = tmp_path / "d.jsonl"
    p.write_bytes(b"{}\n" + b"\n" * 100_000)
    assert main(["validate", "training_jsonl", str(p), "--max-errors", "5"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("W-JSONL-BLANK") == 5
    assert captured.out.strip() == (
        "training_jsonl (jsonl): 1 rows in 1 file (100000 warnings, first 5 shown). OK"
    )


def test_millions_of_bad_rows_past_max_errors_take_about_the_time_of_good_rows(tmp_path):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    n = 400_000
    good.write_bytes(b"{}\n" * n)
    bad.write_bytes(b"x\n" * (n // 2) + b'{"a": }\n' * (n // 2))

    def timed(path: Path) -> float:
        start = time.process_time()
        res = scan_range(path, None, max_errors=5)
        assert res.rows == n
        return time.process_time() - start

    base = min(timed(good) for _ in range(2))
    took = min(timed(bad) for _ in range(2))
    assert took < 10 * base + 0.3, f"bad rows {took:.2f}s vs good rows {base:.2f}s"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_character_device_is_refused_at_once(device):
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "steps", "validate", "training_jsonl", device, "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and time.monotonic() - start < 30, proc.stderr
    [f] = json.loads(proc.stdout)["findings"]
    assert f["code"] == "E-INPUT-KIND" and "a character device" in f["message"]
