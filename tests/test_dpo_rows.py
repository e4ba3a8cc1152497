"""DPO rows: what real NeMo-RL v0.7.0 refuses is an error, what it trains on is not.

The fidelity oracle (../shared/oracle/REPORT.md, rows 7-9 and 11) ran these rows through NeMo-RL:
chosen/rejected as message lists, a null prompt and a row missing `rejected` fail its chat
template (llm_message_utils.py:530); empty chosen/rejected strings train. So the first three stay
E-DPO-ROW and the last is W-DPO-EMPTY-RESPONSE: printed, one finding per cause, exit 0, the row
kept by rl_prep. Files are preference JSONL as users write them.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_preflight_artifacts import _findings, _run
from test_rl_prep import prep, read_split, write_blend, write_jsonl

from catalog.contracts.jsonl import Source
from catalog.contracts.validation import scan_jsonl
from steps.cli import main

EMPTY = "W-DPO-EMPTY-RESPONSE"


def pairs(n: int, *, empty_every: int = 0) -> list[dict]:
    """Preference rows; every `empty_every`-th one has an empty chosen (whitespace) response."""
    rows = []
    for i in range(n):
        chosen = " " if empty_every and i % empty_every == 0 else f"{i} + {i} = {2 * i}"
        rows.append({"prompt": f"What is {i} + {i}?", "chosen": chosen, "rejected": str(i)})
    return rows


def validate(path: Path, capsys) -> tuple[int, dict]:
    code = main(["validate", "preference_jsonl", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_empty_chosen_strings_are_one_warning_with_count_and_validate_exits_0(
    tmp_path: Path, capsys
):
    rows = write_jsonl(tmp_path / "pairs.jsonl", pairs(30, empty_every=4))
    code, report = validate(rows, capsys)
    assert code == 0 and report["ok"], report
    [f] = report["findings"]
    assert (f["code"], f["severity"], f["key"], f["line"]) == (EMPTY, "warning", "chosen", 1)
    assert f["message"].startswith("8 rows: chosen: 'chosen' is empty")
    assert "first at lines 1, 5, 9, ..." in f["message"]
    assert report["warnings"] == 1 and report["errors"] == 0 and report["bad_rows"] == 0


def test_the_warning_is_printed_by_plain_validate(tmp_path: Path, capsys):
    rows = [{"prompt": "p", "chosen": "c", "rejected": ""}, *pairs(3)]
    path = write_jsonl(tmp_path / "pairs.jsonl", rows)
    assert main(["validate", "preference_jsonl", str(path)]) == 0
    out = capsys.readouterr()
    assert "(1 warning). OK" in out.out
    assert f"pairs.jsonl:1: warning: {EMPTY} rejected: 'rejected' is empty" in out.err


def test_what_nemo_rl_fails_on_stays_an_error_beside_the_warning(tmp_path: Path, capsys):
    rows = [
        *pairs(2, empty_every=1),
        {"prompt": "q", "chosen": [{"role": "assistant", "content": "a"}], "rejected": "b"},
        {"prompt": None, "chosen": "a", "rejected": "b"},
        {"prompt": "q", "chosen": "a"},
    ]
    code, report = validate(write_jsonl(tmp_path / "pairs.jsonl", rows), capsys)
    assert code == 1
    got = [(f["code"], f["severity"], f["key"], f["line"]) for f in report["findings"]]
    assert got == [
        (EMPTY, "warning", "chosen", 1),
        ("E-DPO-ROW", "error", "chosen", 3),
        ("E-DPO-ROW", "error", "prompt", 4),
        ("E-DPO-ROW", "error", "rejected", 5),
    ]
    assert (report["errors"], report["warnings"], report["bad_rows"]) == (3, 1, 3)


def test_warnings_scanned_in_parallel_ranges_are_one_cause_counted_once(tmp_path: Path):
    path = write_jsonl(tmp_path / "pairs.jsonl", pairs(4000, empty_every=10))
    scan = scan_jsonl([Source(path)], "preference_rows", {}, workers=2, chunk_bytes=16 << 10)
    [f] = scan.findings
    assert (f.code, f.is_error, scan.warnings, scan.errors) == (EMPTY, False, 1, 0)
    assert f.message.startswith("400 rows: ") and f.line == 1


def test_dpo_dry_run_on_empty_responses_passes_with_the_warning(tmp_path: Path):
    data = write_jsonl(tmp_path / "train.jsonl", pairs(12, empty_every=3))
    proc = _run(tmp_path, "rl/nemo_rl/dpo", "-c", "tiny", f"data.train.data_path={data}")
    found = [f for f in _findings(proc) if f["code"] in (EMPTY, "E-DPO-ROW")]
    assert [(f["code"], f["severity"], f["line"]) for f in found] == [(EMPTY, "warning", 1)]
    assert found[0]["message"].startswith("4 rows: ")
    assert not [f for f in _findings(proc) if f["code"] == "E-DPO-ROW"]


def test_rl_prep_keeps_preference_rows_with_empty_responses(tmp_path: Path):
    write_jsonl(tmp_path / "in.jsonl", pairs(6, empty_every=2))
    blend = write_blend(tmp_path, [{"name": "d", "path": "in.jsonl"}])
    summary = prep(blend, tmp_path / "out", output_type="preference_jsonl", on_bad_row="error")
    assert summary["datasets"]["d"].get("skipped", {}) == {}
    rows = [r for s in ("train", "val", "test") for r in read_split(tmp_path / "out", s)]
    assert sorted(r["chosen"] for r in rows).count(" ") == 3
