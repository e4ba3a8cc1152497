"""`materialize-inputs`: a stage's inputs are fixed when it first starts, and a chain's later
segment (which starts through the same step) reuses them: the same rows file, the same step_N.

Real files in tmp_path: a run dir with its `inputs/deferred.json` as `runners.bind` writes it,
an earlier stage's rows and NeMo-RL checkpoint dir; `main` is called as the job calls it (with
no program to exec).
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import pytest

from runners.pipeline.materialize import RECORD, main

ROW = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}


def step(ckpt: Path, n: int) -> Path:
    """A complete NeMo-RL step_N (DCP weights, config, training_info)."""
    d = ckpt / f"step_{n}"
    (d / "policy" / "weights").mkdir(parents=True)
    for name in (".metadata", "__0_0.distcp"):
        (d / "policy" / "weights" / name).write_bytes(b"x")
    (d / "config.yaml").write_text("a: 1\n")
    (d / "training_info.json").write_text(json.dumps({"total_steps": n, "epoch": 0, "step": n}))
    return d


@pytest.fixture
def stage(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(run dir, the earlier stage's rows file, its checkpoint dir with step_1)."""
    rows, ckpt, run = tmp_path / "prep" / "train.jsonl", tmp_path / "rl" / "ckpt", tmp_path / "run"
    rows.parent.mkdir(parents=True)
    rows.write_text(json.dumps(ROW) + "\n" + json.dumps(ROW) + "\n")
    step(ckpt, 1)
    (run / "inputs").mkdir(parents=True)
    (run / "resolved.yaml").write_text("{}\n")
    deferred = [
        {"relpath": "inputs/train.jsonl", "source": str(rows), "port": "train", "rows": True,
         "type": "training_jsonl", "key": "data.train"},
        {"relpath": "inputs/checkpoint", "source": str(ckpt), "port": "checkpoint",
         "rows": False, "type": "nemo_rl_checkpoint", "key": "src"},
    ]  # fmt: skip
    (run / "inputs" / "deferred.json").write_text(json.dumps(deferred))
    return run, rows, ckpt


def start(run: Path) -> tuple[int, str]:
    """One job start's materialize step (a segment of a chain, or the stage's one job)."""
    out = io.StringIO()
    return main(str(run), [], out), out.getvalue()


def test_a_later_start_keeps_the_rows_file_and_the_step_the_first_start_derived(stage):
    run, rows, ckpt = stage
    assert start(run)[0] == 0
    data, link = run / "inputs" / "train.jsonl", run / "inputs" / "checkpoint"
    before = data.stat()
    first = data.read_bytes()
    assert link.readlink() == ckpt / "step_1"
    # After the first segment: the checkpoint has a newer step, and the source was touched.
    step(ckpt, 2)
    rows.write_text(json.dumps(ROW) + "\n")
    code, text = start(run)
    assert code == 0, text
    assert "input train: inputs/train.jsonl kept as the stage's first start wrote it" in text
    assert f"input checkpoint: inputs/checkpoint -> {ckpt / 'step_1'} kept" in text
    after = data.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert data.read_bytes() == first and link.readlink() == ckpt / "step_1"
    assert sorted(p.name for p in (run / "inputs").iterdir()) == [
        "checkpoint", "deferred.json", "materialized.json", "train.jsonl"]  # fmt: skip


def test_the_record_names_each_input_with_its_digest_or_step(stage):
    run, rows, ckpt = stage
    start(run)
    record = {w["port"]: w for w in json.loads((run / RECORD).read_text())}
    digest = hashlib.sha256((run / "inputs" / "train.jsonl").read_bytes()).hexdigest()
    assert record["train"]["sha256"] == digest and record["train"]["source"] == str(rows)
    assert record["checkpoint"]["target"] == str(ckpt / "step_1")


def test_rows_removed_after_the_first_start_are_put_back_when_the_source_gives_the_same(stage):
    run, _rows, _ckpt = stage
    start(run)
    data = run / "inputs" / "train.jsonl"
    first = data.read_bytes()
    data.unlink()
    (run / "inputs" / "checkpoint").unlink()
    code, text = start(run)
    assert code == 0, text
    assert "(put back as the stage's first start wrote it, sha256" in text
    assert "(linked again)" in text
    assert data.read_bytes() == first


def test_rows_changed_when_the_source_changed_too_stop_a_later_start_and_write_nothing(stage):
    run, rows, _ckpt = stage
    start(run)
    data = run / "inputs" / "train.jsonl"
    data.write_text(json.dumps(ROW) + "\n")
    rows.write_text(json.dumps(ROW) + "\n")
    record = (run / RECORD).read_bytes()
    code, text = start(run)
    assert code == 1
    assert (
        "E-STAGE-INPUT input train (data.train): inputs/train.jsonl, the rows this stage " in text
    )
    assert "would train on other data than the segments before it" in text
    assert data.read_text() == json.dumps(ROW) + "\n" and (run / RECORD).read_bytes() == record
    assert not [p for p in (run / "inputs").iterdir() if p.name.startswith(".")]


def test_a_step_removed_since_the_first_start_stops_a_later_start_not_a_newer_step(stage):
    run, _rows, ckpt = stage
    start(run)
    step(ckpt, 2)
    shutil.rmtree(ckpt / "step_1")
    code, text = start(run)
    assert code == 1
    assert f"{ckpt / 'step_1'}, the step this stage started from, is gone" in text
    assert (run / "inputs" / "checkpoint").readlink() == ckpt / "step_1"


def test_a_first_start_that_fails_records_nothing_so_the_next_start_derives_again(stage):
    run, rows, _ckpt = stage
    rows.unlink()
    code, text = start(run)
    assert code == 1 and "was not written by the stage before this one" in text
    assert not (run / RECORD).exists()
    rows.write_text(json.dumps(ROW) + "\n")
    code, text = start(run)
    assert code == 0 and "1 file(s) of" in text, text
    assert (run / "inputs" / "train.jsonl").read_text() == json.dumps(ROW) + "\n"


def test_an_unreadable_record_is_a_finding_not_a_rewrite(stage):
    run, _rows, _ckpt = stage
    start(run)
    (run / RECORD).write_text("[{")
    code, text = start(run)
    assert code == 2 and "E-RUN-RECORD" in text and "first start derived" in text
