"""rl_prep and step configs against hostile or damaged input (issue 27 items 6, 7 and 10): YAML
that expands without bound, files that never end, absurd worker counts and damaged Parquet are
each one finding with exit 1 or 2, in bounded time and memory, never exit 70."""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from run_fixtures import REPO, clean_env
from test_rl_prep import config, gym_row, prep, read_split, write_blend, write_jsonl

from catalog.errors import StepsError
from catalog.yamlfile import MAX_ALIAS_NODES
from runners.rl_prep.blend import load_blend
from runners.rl_prep.options import MAX_WORKERS, config_problems, usable_cpus

MEMORY_CAP = 2 << 30


def billion_laughs(last: str) -> str:
    """Nine levels of nine aliases: 435 million nodes from 500 bytes; `last` uses the top."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return "\n".join([*lines, last]) + "\n"


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def steps_capped(tmp_path: Path, *argv: str) -> tuple[int, str]:
    """`python -m steps ARGV` with 2 GiB of address space and 60 s (a bomb fails the test):
    the exit code and stdout + stderr."""
    env = clean_env(tmp_path, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "steps", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        preexec_fn=_capped,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_a_billion_laughs_blend_is_refused_at_its_anchor_in_bounded_memory(tmp_path: Path):
    blend = tmp_path / "bomb.yaml"
    blend.write_text(billion_laughs("datasets: *a9"))
    rc, out = steps_capped(
        tmp_path, "run", "data_prep/rl_prep", "-c", "tiny",
        f"blend_path={blend}", f"output_dir={tmp_path / 'out'}",
    )  # fmt: skip
    assert rc == 1, out  # preflight's finding
    assert f"{blend}:10: E-BLEND" in out and f"more than {MAX_ALIAS_NODES} nodes" in out
    assert "billion-laughs" in out and "Traceback" not in out
    assert not (tmp_path / "out").exists()


def test_a_billion_laughs_step_config_is_refused_at_its_anchor_in_bounded_memory(tmp_path: Path):
    cfg = tmp_path / "bomb.yaml"
    cfg.write_text(billion_laughs("seed: 1"))
    rc, out = steps_capped(tmp_path, "run", "data_prep/rl_prep", "-c", str(cfg), "--dry-run")
    assert rc == 2, out
    assert f"{cfg}:9: E-CONFIG-YAML" in out  # a8, aliased 9 times, expands the most
    assert "billion-laughs" in out


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_device_or_fifo_as_blend_is_refused_before_it_is_read(tmp_path: Path, special: str):
    path = Path(special)
    if special == "fifo":
        path = tmp_path / "blend.yaml"
        os.mkfifo(path)  # no writer: reading it would wait forever
    rc, out = steps_capped(
        tmp_path, "run", "data_prep/rl_prep", "-c", "tiny", "--dry-run",
        f"blend_path={path}", f"output_dir={tmp_path / 'out'}",
    )  # fmt: skip
    assert rc == 1, out
    kind = "a character device" if special == "/dev/zero" else "a named pipe (FIFO)"
    assert f"{path}: E-BLEND cannot read the blend: is {kind}, not a regular file" in out


def test_a_device_as_step_config_is_refused_with_its_kind(tmp_path: Path):
    rc, out = steps_capped(tmp_path, "run", "data_prep/rl_prep", "-c", "/dev/zero", "--dry-run")
    assert rc == 2, out
    assert "/dev/zero: E-CONFIG-READ" in out and "a character device" in out


def test_a_blend_over_16_mib_is_refused_saying_the_limit(tmp_path: Path):
    blend = tmp_path / "blend.yaml"
    blend.write_text("datasets: []\n" + "#" * (16 << 20))
    with pytest.raises(StepsError) as err:
        load_blend(blend)
    assert err.value.exit_code == 2
    assert "larger than 16 MiB" in err.value.finding.message


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("seed: 1\ndatasets: []\nseed: 2\n", 3, "found duplicate key `seed` (first at line 1)"),
        ("datasets: &d [*d]\n", 1, "an alias refers to a node that holds it"),
    ],
    ids=["duplicate-key", "self-alias"],
)
def test_a_blend_that_repeats_a_key_or_holds_itself_is_refused_at_the_line(
    tmp_path: Path, text: str, line: int, problem: str
):
    blend = tmp_path / "blend.yaml"
    blend.write_text(text)
    with pytest.raises(StepsError) as err:
        load_blend(blend)
    f = err.value.finding
    assert (f.code, f.line, f.path) == ("E-BLEND", line, str(blend))
    assert problem in f.message


def test_a_blend_may_share_settings_through_anchors_and_merge_keys(tmp_path: Path):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(i) for i in range(3)])
    (tmp_path / "blend.yaml").write_text(
        "datasets:\n  - &c {path: a.jsonl, weight: 2.0, name: one}\n  - {<<: *c, name: two}\n"
    )
    blend = load_blend(tmp_path / "blend.yaml")
    assert [(d.name, d.weight) for d in blend.datasets] == [("one", 2.0), ("two", 2.0)]


def test_workers_above_the_bound_are_refused_by_the_dry_run_check(tmp_path: Path):
    _, problems = config_problems(config(tmp_path / "b.yaml", tmp_path / "o", workers=100000))
    assert [p.key for p in problems] == ["workers"]
    assert f"less than or equal to {MAX_WORKERS}" in problems[0].message
    model, problems = config_problems(config(tmp_path / "b.yaml", tmp_path / "o", workers=64))
    assert problems == [] and model is not None


def test_more_workers_than_usable_cpus_run_as_many_as_the_cpus_with_a_warning(
    tmp_path: Path, capsys
):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(i) for i in range(50)])
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    summary = prep(blend, tmp_path / "out", workers=64)
    cpus = usable_cpus()
    err = capsys.readouterr().err
    assert f"warning: W-WORKERS-CAPPED workers=64 but this process may use {cpus} CPU(s)" in err
    assert f"running {cpus} worker(s)" in err
    assert sum(summary["rows"].values()) == 50


def write_parquet(path: Path, rows: list[dict], **options) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path, **options)
    return path


def prep_file(tmp_path: Path, name: str) -> dict:
    blend = write_blend(tmp_path, [{"name": "d", "path": name}])
    return prep(blend, tmp_path / "out", train_ratio=1.0, val_ratio=0.0)


def _truncated(good: bytes) -> bytes:
    return good[:300]


def _page_flipped(good: bytes) -> bytes:
    first = good.index(b"What is 7 + 7?")  # in responses_create_params, then in question
    at = good.index(b"What is 7 + 7?", first + 1)  # a plain, uncompressed string page
    return good[:at] + b"\xff\xfe" + good[at + 2 :]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_truncated, "cannot read this Parquet file: Parquet magic bytes not found"),
        (lambda good: b"PAR1", "cannot read this Parquet file: Parquet file size is 4 bytes"),
        (
            lambda good: b"".join(json.dumps(gym_row(i)).encode() + b"\n" for i in range(3)),
            "cannot read this Parquet file: Parquet magic bytes not found",
        ),
        (_page_flipped, "cannot read this Parquet file (row group 0, column `question`): 'utf-8'"),
    ],
    ids=["truncated", "magic-only", "jsonl-named-parquet", "page-flip"],
)
def test_a_damaged_parquet_file_is_one_finding_naming_it(tmp_path: Path, damage, message: str):
    good = write_parquet(
        tmp_path / "good.parquet",
        [gym_row(i) for i in range(20)],
        compression="none",
        use_dictionary=False,
    ).read_bytes()
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(damage(good))
    with pytest.raises(StepsError) as err:
        prep_file(tmp_path, "bad.parquet")
    f = err.value.finding
    assert (f.code, f.path, err.value.exit_code) == ("E-PARQUET", str(bad), 1)
    assert f.message.startswith(message)
    assert not (tmp_path / "out").exists()


def test_a_parquet_file_that_is_json_lines_is_told_to_be_named_jsonl(tmp_path: Path):
    write_jsonl(tmp_path / "rows.parquet", [gym_row(1)])
    with pytest.raises(StepsError) as err:
        prep_file(tmp_path, "rows.parquet")
    assert "if it is JSON Lines, name it .jsonl" in (err.value.finding.fix or "")


def test_a_truncated_arrow_file_is_one_finding_naming_it(tmp_path: Path):
    table = pa.Table.from_pylist([gym_row(i) for i in range(20)])
    with (
        pa.OSFile(str(tmp_path / "good.arrow"), "wb") as sink,
        pa.ipc.new_file(sink, table.schema) as writer,
    ):
        writer.write_table(table)
    (tmp_path / "bad.arrow").write_bytes((tmp_path / "good.arrow").read_bytes()[:200])
    with pytest.raises(StepsError) as err:
        prep_file(tmp_path, "bad.arrow")
    f = err.value.finding
    assert (f.code, f.path, err.value.exit_code) == ("E-ARROW", str(tmp_path / "bad.arrow"), 1)


def test_a_parquet_schema_nested_past_pyarrows_default_depth_is_read(tmp_path: Path):
    deep: object = "leaf"
    for _ in range(150):
        deep = {"a": deep}
    rows = [gym_row(i, extra=deep) for i in range(5)]
    write_parquet(tmp_path / "deep.parquet", rows, store_schema=False)
    prep_file(tmp_path, "deep.parquet")
    assert [r["extra"] for r in read_split(tmp_path / "out", "train")] == [deep] * 5


def test_binary_columns_become_text_or_base64_and_nan_stays_nan(tmp_path: Path):
    rows = [gym_row(i, blob=b"\xff\x00bin", text=b"caf\xc3\xa9", score=math.nan) for i in range(3)]
    write_parquet(tmp_path / "b.parquet", rows)
    prep_file(tmp_path, "b.parquet")
    out = read_split(tmp_path / "out", "train")
    assert [(r["blob"], r["text"]) for r in out] == [("/wBiaW4=", "café")] * 3
    assert all(math.isnan(r["score"]) for r in out)


@pytest.mark.parametrize("name", ["empty.parquet", "empty.jsonl"])
def test_a_dataset_with_no_rows_is_an_error_not_an_empty_output(tmp_path: Path, name: str):
    if name.endswith(".parquet"):
        pq.write_table(pa.Table.from_pylist([gym_row(1)]).slice(0, 0), tmp_path / name)
    else:
        (tmp_path / name).write_text("")
    with pytest.raises(StepsError) as err:
        prep_file(tmp_path, name)
    f = err.value.finding
    assert (f.code, f.line, err.value.exit_code) == ("E-BLEND", 2, 1)
    assert f.message == f"dataset `d` has no rows ({tmp_path / name})"
    assert not (tmp_path / "out").exists()
