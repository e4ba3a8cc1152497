"""What NeMo-RL reads, we read: a data path is judged as NeMo-RL's loader opens it.

NeMo-RL opens `data_path` by its extension (.arrow .csv .json .jsonl .parquet .txt) through the
Hugging Face builders; the rows the dataset class then sees are what the row contracts judge.
Real files of each format are written to tmp_path and judged by the dry run of the shipped DPO
and GRPO steps (`steps run ... --dry-run`), or by `validate` (the same judge).
"""

from __future__ import annotations

import csv
import inspect
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pipeline_toys import steps_main
from run_fixtures import RECORD_VAR, fake_checkout

from catalog.contracts import validate_artifact
from catalog.contracts.csv_types import infer_column
from catalog.contracts.loader_formats import builder_for, data_open, loader_release

DROP = ("NEMO_RL_HOME", "STEPS_RUNS_DIR", RECORD_VAR)
PAIRS = [
    {"prompt": f"What is {i}+2?", "chosen": f"{i + 2}, as {i}+2={i + 2}.", "rejected": "I'd say 5."}
    for i in range(4)
]  # the tiny configs draw 4 rows a step: fewer would be another finding
PROBLEMS = [
    {"problem": "What is 2+2?", "expected_answer": "4"},
    {"problem": "Sum of 1..20?", "expected_answer": "210"},
    {"problem": "Half of 1?", "expected_answer": "\\frac{1}{2}"},  # not all integers: text
    {"problem": "Solve x+1=4.", "expected_answer": "3"},
]


def write(path: Path, rows: list[dict]) -> Path:
    """`rows` in the format the extension names, as a user would write them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ext = path.suffix
    if ext == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif ext == ".json":
        path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    elif ext == ".csv":
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    elif ext == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif ext == ".arrow":
        table = pa.Table.from_pylist(rows)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
    else:
        raise AssertionError(ext)
    return path


def dry_run(tmp_path: Path, step: str, *overrides: str, **env: str):
    checkout = tmp_path / "nemo-rl"
    if not checkout.is_dir():
        fake_checkout(checkout)
    argv = ["run", step, "-c", "tiny", "--nemo-rl", str(checkout), "--dry-run", "--json"]
    argv += ["--runs-dir", str(tmp_path / "runs"), *overrides]
    proc = steps_main(
        *argv, cwd=tmp_path, env={"STEPS_OUTPUT": str(tmp_path / "o"), **env}, drop=DROP
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def errors(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f.get("severity", "error") == "error"]


def about(findings: list[dict], path: Path) -> list[dict]:
    return [f for f in findings if f.get("path") == str(path) or str(path) in f["message"]]


FORMATS = [".jsonl", ".json", ".csv", ".parquet", ".arrow"]


# --- every extension: a valid file passes, a broken one is refused where it breaks -----------


@pytest.mark.parametrize("ext", FORMATS)
def test_dpo_pairs_in_each_format_pass_the_dry_run(tmp_path: Path, ext: str) -> None:
    train = write(tmp_path / f"pairs{ext}", PAIRS)
    code, found = dry_run(tmp_path, "rl/nemo_rl/dpo", f"data.train.data_path={train}")
    assert about(found, train) == [] and code == 0, found


@pytest.mark.parametrize("ext", FORMATS)
def test_dpo_pairs_without_the_rejected_column_are_refused_at_it(tmp_path: Path, ext: str) -> None:
    rows = [{"prompt": r["prompt"], "chosen": r["chosen"]} for r in PAIRS]
    train = write(tmp_path / f"pairs{ext}", rows)
    code, found = dry_run(tmp_path, "rl/nemo_rl/dpo", f"data.train.data_path={train}")
    [f] = errors(about(found, train))
    assert code == 1 and (f["code"], f["key"]) == ("E-DPO-ROW", "rejected")
    assert "missing 'rejected'" in f["message"]
    where = {".jsonl": 1, ".json": 2, ".csv": 2}  # the first row's line; columnar rows have none
    assert f.get("line") == where.get(ext)
    if ext in (".parquet", ".arrow"):
        assert f["message"].startswith("4 rows: ") and "first at rows 1, 2, 3, ..." in f["message"]


@pytest.mark.parametrize("ext", FORMATS)
def test_grpo_problems_in_each_format_pass_the_dry_run(tmp_path: Path, ext: str) -> None:
    train = write(tmp_path / f"math{ext}", PROBLEMS)
    code, found = dry_run(tmp_path, "rl/nemo_rl/rlvr", f"data.train.data_path={train}")
    assert about(found, train) == [] and code == 0, found


@pytest.mark.parametrize("ext", FORMATS)
def test_grpo_row_with_an_empty_problem_is_refused_at_its_row(tmp_path: Path, ext: str) -> None:
    rows = [PROBLEMS[2], {"problem": " ", "expected_answer": "3"}, *PROBLEMS[2:]]
    train = write(tmp_path / f"math{ext}", rows)
    code, found = dry_run(tmp_path, "rl/nemo_rl/rlvr", f"data.train.data_path={train}")
    [f] = errors(about(found, train))
    assert code == 1 and (f["code"], f["key"]) == ("E-RLVR-ROW", "problem")
    line = {".jsonl": 2, ".json": 6, ".csv": 3}.get(ext)  # the second row
    assert f.get("line") == line
    if line is None:
        assert f["message"].startswith("row 2: problem: ")


def test_grpo_rows_are_counted_as_the_loader_reads_them(tmp_path: Path) -> None:
    train = tmp_path / "math.json"
    train.write_text(json.dumps(PROBLEMS[:3]), encoding="utf-8")  # one line, three rows
    code, found = dry_run(tmp_path, "rl/nemo_rl/rlvr", f"data.train.data_path={train}")
    [f] = [f for f in found if f["code"] == "E-ZERO-STEPS"]
    assert "the train data has 3 rows but each step draws 4 prompts" in f["message"]
    write(train, PROBLEMS)
    code, found = dry_run(tmp_path, "rl/nemo_rl/rlvr", f"data.train.data_path={train}")
    assert code == 0 and not [f for f in found if f["code"] == "E-ZERO-STEPS"]


def test_json_array_that_is_cut_short_is_e_json_at_the_element(tmp_path: Path) -> None:
    train = tmp_path / "pairs.json"
    train.write_text(json.dumps(PAIRS, indent=2)[:-30], encoding="utf-8")
    code, found = dry_run(tmp_path, "rl/nemo_rl/dpo", f"data.train.data_path={train}")
    [f] = errors(about(found, train))
    assert code == 1 and f["code"] == "E-JSON" and f["line"] == 17  # 5 lines an element
    assert f["message"].startswith("element 4: ") and "JSON array of objects" in f["message"]


def test_json_array_is_read_element_by_element_whatever_their_size(tmp_path: Path) -> None:
    big = {**PAIRS[0], "chosen": "x" * (3 << 20)}  # past the 1 MiB read block
    path = write(tmp_path / "pairs.json", [PAIRS[1], big, PAIRS[2]])
    assert validate_artifact("preference_jsonl", path).ok
    path.write_text('[{"a": 1}\n {"b": 2}, 7]', encoding="utf-8")
    [f] = validate_artifact("training_jsonl", path).findings
    assert (f.code, f.line) == ("E-JSON", 2) and "after element 1: expected ','" in f.message
    path.write_text('[{"a": 1},\n 7]', encoding="utf-8")
    [f] = validate_artifact("training_jsonl", path).findings
    assert (f.code, f.line) == ("E-JSON", 2) and "element 2 is a number, not an object" in f.message


def test_csv_row_with_more_fields_than_the_header_is_e_csv_not_e_jsonl(tmp_path: Path) -> None:
    train = tmp_path / "pairs.csv"
    train.write_text("prompt,chosen,rejected\nhi,a,b\nwhat, is this,good,bad\n", encoding="utf-8")
    code, found = dry_run(tmp_path, "rl/nemo_rl/dpo", f"data.train.data_path={train}")
    [f] = errors(about(found, train))
    assert code == 1 and (f["code"], f["line"]) == ("E-CSV", 3)
    assert "4 fields, the header 3" in f["message"] and "CSV with a header row" in f["message"]
    assert "quote fields that hold commas" in f["fix"]


def test_csv_that_is_not_utf8_is_e_csv_at_its_line(tmp_path: Path) -> None:
    train = tmp_path / "pairs.csv"
    train.write_bytes(b"prompt,chosen,rejected\nhi,a,b\nh\xe9,c,d\n")  # Latin-1
    report = validate_artifact("preference_jsonl", train)
    [f] = [f for f in report.findings if f.is_error]
    assert (f.code, f.line) == ("E-CSV", 3) and "not UTF-8 text" in f.message


def test_a_later_csv_value_its_column_type_cannot_hold_fails_as_the_builder_does(
    tmp_path: Path,
) -> None:
    from catalog.contracts.builder_rows import FIRST_ROWS, read_builder_rows

    lines = ["question,level", *(f"q{i},{i % 5}" for i in range(FIRST_ROWS)), "q,hard", "q,3"]
    path = tmp_path / "math.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = read_builder_rows(path, "csv", limit=None, max_bytes=None)
    assert read.types["level"] == "int" and len(read.rows) == FIRST_ROWS
    [f] = read.findings
    assert (f.code, f.line) == ("E-CSV", FIRST_ROWS + 2) and "column 'level' is int" in f.message
    assert read_builder_rows(path, "csv").findings == []  # the dry run reads the first chunk


def test_text_file_rows_are_text_lines_judged_by_the_same_contract(tmp_path: Path) -> None:
    train = tmp_path / "pairs.txt"
    train.write_text("a prompt\nanother\n", encoding="utf-8")
    code, found = dry_run(tmp_path, "rl/nemo_rl/dpo", f"data.train.data_path={train}")
    [f] = errors(about(found, train))
    assert code == 1 and f["code"] == "E-DPO-ROW" and f["line"] == 1
    assert "the text builder reads the columns text" in f["message"]
    assert validate_artifact("training_jsonl", train).ok  # any rows: it has two


def test_parquet_rows_are_a_warning_not_an_error_without_pyarrow(tmp_path: Path) -> None:
    from catalog.contracts.builder_rows import read_builder_rows

    train = write(tmp_path / "pairs.parquet", PAIRS)
    read = read_builder_rows(train, "parquet")
    assert [r[2] for r in read.rows] == PAIRS  # with pyarrow: the rows themselves
    import sys

    saved = sys.modules.get("pyarrow")
    sys.modules["pyarrow"] = None  # type: ignore[assignment]  # import fails as if absent
    try:
        report = validate_artifact("preference_jsonl", train)
    finally:
        sys.modules["pyarrow"] = saved  # type: ignore[assignment]
    assert report.ok and [f.code for f in report.findings] == ["W-DATA-UNCHECKED"]
    assert "pip install 'nemo-rl-steps[parquet]'" in (report.findings[0].fix or "")


@pytest.mark.parametrize("ext", [".csv", ".json"])
def test_a_file_past_the_byte_cap_is_judged_on_its_whole_first_rows(tmp_path: Path, ext: str):
    from catalog.contracts.builder_rows import read_builder_rows

    rows = [
        {"prompt": f'say "{i}",\nplease', "chosen": "a" * 50, "rejected": "b"} for i in range(99)
    ]
    path = write(tmp_path / f"pairs{ext}", rows)
    read = read_builder_rows(path, ext[1:], max_bytes=path.stat().st_size // 2)
    assert read.capped and read.findings == [] and 30 < len(read.rows) < 99
    assert [r[2] for r in read.rows] == rows[: len(read.rows)]  # no cut row among them


# --- types as the builder gives them: a numeric answer the math verifier cannot compare -------


def test_csv_columns_are_typed_as_pandas_types_them() -> None:
    assert infer_column(["4", "210", " 7"]) == "int"
    assert infer_column(["4", "", "7"]) == "float"  # an empty cell among integers
    assert infer_column(["1.5", "1e3", "inf"]) == "float"
    assert infer_column(["True", "false", "NA"]) == "bool"
    assert infer_column(["4", "four"]) == "str"
    assert infer_column(["99999999999999999999"]) == "str"  # past uint64


@pytest.mark.parametrize("ext", [".csv", ".jsonl"])
def test_numeric_answer_under_the_math_verifier_is_an_error_at_the_column(
    tmp_path: Path, ext: str
) -> None:
    answers = [r for r in PROBLEMS if r["expected_answer"].isdigit()] * 2
    rows = [{**r, "expected_answer": int(r["expected_answer"])} for r in answers]
    if ext == ".csv":
        rows = answers  # written as text; the csv builder types the all-integer column as int
    train = write(tmp_path / f"math{ext}", rows)
    code, found = dry_run(tmp_path, "rl/nemo_rl/rlvr", f"data.train.data_path={train}")
    [f] = errors(about(found, train))
    assert code == 1 and (f["code"], f["key"]) == ("E-RLVR-NUMERIC-ANSWER", "expected_answer")
    assert "scores the row 0" in f["message"] and f["message"].startswith("6 rows: ")
    if ext == ".csv":
        assert "types column 'expected_answer' as int" in f["message"]


def test_numeric_answer_passes_where_the_processor_makes_it_text(tmp_path: Path) -> None:
    rows = [{"problem": "2+2?", "expected_answer": 4}] * 4
    train = write(tmp_path / "math.jsonl", rows)
    processor = "++data.default.processor=math_data_processor"  # str()s the answer
    _, found = dry_run(tmp_path, "rl/nemo_rl/rlvr", f"data.train.data_path={train}", processor)
    assert about(found, train) == []


def test_json_lines_named_ndjson_is_an_error_at_the_data_path_key(tmp_path: Path) -> None:
    train = tmp_path / "pairs.ndjson"
    train.write_text("".join(json.dumps(r) + "\n" for r in PAIRS), encoding="utf-8")
    code, found = dry_run(tmp_path, "rl/nemo_rl/dpo", f"data.train.data_path={train}")
    [f] = [f for f in errors(found) if f["code"] == "E-DATA-FORMAT"]
    assert code == 1 and f["key"] == "data.train.data_path" and ".jsonl" in f["fix"]
    assert "has no builder for .ndjson" in f["message"]


# --- split and subset of a local file ---------------------------------------------------------


def test_split_other_than_train_and_a_subset_on_a_local_file_are_errors_at_their_keys(
    tmp_path: Path,
) -> None:
    train = write(tmp_path / "pairs.csv", PAIRS)
    code, found = dry_run(
        tmp_path,
        "rl/nemo_rl/dpo",
        f"data.train.data_path={train}",
        "++data.train.split=test",
        "++data.train.subset=main",
    )
    split = sorted((f["key"], f["code"]) for f in errors(found) if f["code"] == "E-DATA-SPLIT")
    assert code == 1 and split == [
        ("data.train.split", "E-DATA-SPLIT"),
        ("data.train.subset", "E-DATA-SPLIT"),
    ]
    code, found = dry_run(
        tmp_path, "rl/nemo_rl/dpo", f"data.train.data_path={train}", "++data.train.split=train"
    )
    assert code == 0 and not [f for f in found if f["code"] == "E-DATA-SPLIT"], errors(found)


# --- user dataset classes (0.7.0+) ------------------------------------------------------------


def _user_package(root: Path) -> Path:
    pkg = root / "site" / "mydata"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "pairs.py").write_text("raise SystemExit('never imported by steps')\n", encoding="utf-8")
    return root / "site"


def test_user_dataset_class_with_its_own_columns_passes_with_one_warning(tmp_path: Path) -> None:
    site = _user_package(tmp_path)
    train = write(tmp_path / "own.csv", [{"question": "q", "better": "a", "worse": "b"}])
    code, found = dry_run(
        tmp_path,
        "rl/nemo_rl/dpo",
        f"data.train.data_path={train}",
        "data.default.dataset_name=mydata.pairs.OwnPairs",
        PYTHONPATH=str(site),
    )
    assert code == 0 and errors(found) == [], found
    [f] = [f for f in found if f["code"] == "W-DATA-CLASS" and f["key"].startswith("data.train")]
    assert f["key"] == "data.train.dataset_name" and "built-in row rules" in f["message"]


def test_user_dataset_class_whose_module_is_nowhere_is_an_error_at_its_key(
    tmp_path: Path,
) -> None:
    train = write(tmp_path / "own.csv", [{"question": "q", "better": "a", "worse": "b"}])
    code, found = dry_run(
        tmp_path,
        "rl/nemo_rl/dpo",
        f"data.train.data_path={train}",
        "data.default.dataset_name=no_such_pkg.pairs.OwnPairs",
    )
    found = [f for f in errors(found) if f["code"] == "E-DATA-CLASS"]
    assert code == 1 and {f["key"] for f in found} == {
        "data.train.dataset_name",
        "data.validation.dataset_name",
    }
    assert "'no_such_pkg.pairs' " in found[0]["message"] and found[0].get("line")


def test_validate_step_with_a_user_class_judges_objects_only_and_says_why(tmp_path: Path) -> None:
    train = write(tmp_path / "own.csv", [{"question": "q", "better": "a", "worse": "b"}])
    argv = ["validate", "preference_jsonl", str(train), "--step", "rl/nemo_rl/dpo", "-c", "tiny"]
    argv += ["data.default.dataset_name=mydata.pairs.OwnPairs", "--json"]
    proc = steps_main(*argv, cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"] and report["rows"] == 1
    assert [f["code"] for f in report["findings"]] == ["W-DATA-CLASS"]
    proc = steps_main(*argv[:-2], "--json", cwd=tmp_path)  # the built-in class: refused
    assert proc.returncode == 1 and "E-DPO-ROW" in proc.stdout


def test_modules_of_editable_installs_are_found_and_unknown_pth_imports_leave_it_open(
    tmp_path: Path,
) -> None:
    from runners.preflight.data_loader import _pth_dirs, module_found

    site = tmp_path / "site-packages"
    site.mkdir()
    _user_package(tmp_path / "src")  # tmp_path/src/site/mydata/pairs.py
    finder = "__editable___mydata_1_0_finder"
    (site / "__editable__.mydata-1.0.pth").write_text(f"import {finder}; {finder}.install()")
    mapping = {"mydata": str(tmp_path / "src" / "site" / "mydata")}
    (site / f"{finder}.py").write_text(f"MAPPING: dict[str, str] = {mapping!r}\n")
    paths = [str(site), *(_pth_dirs(site) or [])]
    assert module_found("mydata.pairs", paths) and not module_found("mydata.other", paths)
    (site / "odd.pth").write_text("import somehook; somehook.install()\n")
    assert _pth_dirs(site) is None  # a finder we cannot read: no verdict, never an error


# --- the table itself ----------------------------------------------------------------------


def test_releases_before_0_6_0_read_only_json_and_dotted_names_come_in_0_7_0() -> None:
    assert builder_for("a.csv", loader_release("0.5.0")) is None
    assert builder_for("a.csv", loader_release("0.6.0")) == "csv"
    assert builder_for("a.JSONL") is None  # the extension is matched exactly
    assert not loader_release("0.6.0").dotted_classes and loader_release("0.7.0").dotted_classes


def test_data_open_says_what_nemo_rl_opens_for_a_block() -> None:
    config = {
        "data": {
            "default": {"dataset_name": "ResponseDataset", "split": "train"},
            "train": {"data_path": "/d/math.csv"},
            "validation": [{"data_path": "/d/v.parquet", "dataset_name": "pkg.mod.Cls"}],
        }
    }
    train = data_open(config, "data.train")
    assert (train.data_path, train.builder, train.split, train.reader) == (
        "/d/math.csv",
        "csv",
        "train",
        "path",
    )
    assert data_open(config, "data.validation.0").reader == "class"


# --- the same readers elsewhere: NeMo-Gym rows stay lines; rl_prep's inputs ------------------


def test_gym_rows_in_a_json_array_are_read_as_lines_as_nemo_gym_dataset_reads_them(
    tmp_path: Path,
) -> None:
    from preflight_fixtures import GYM_ROW, gym_root

    checkout = fake_checkout(tmp_path / "nemo-rl")
    gym_root(checkout / "3rdparty" / "Gym-workspace")
    train = tmp_path / "gym.json"
    train.write_text(json.dumps([GYM_ROW] * 4, indent=2), encoding="utf-8")
    argv = ["run", "rl/nemo_rl/rlvr", "-c", "nemo_gym_tiny", "--nemo-rl", str(checkout)]
    argv += ["--dry-run", "--json", "--runs-dir", str(tmp_path / "runs")]
    proc = steps_main(*argv, f"data.train.data_path={train}", cwd=tmp_path, drop=DROP)
    found = errors(about(json.loads(proc.stdout)["findings"], train))
    assert proc.returncode == 1 and found and {f["code"] for f in found} == {"E-JSONL"}
    assert found[0]["line"] == 1  # NemoGymDataset json.loads each raw line: "[" is not a row


@pytest.mark.parametrize("ext", [".csv", ".json"])
def test_rl_prep_reads_csv_and_json_arrays_as_nemo_rl_types_them(tmp_path: Path, ext: str) -> None:
    from test_rl_prep import prep, read_split, write_blend

    rows = [{"question": f"q{i}", "expected_answer": f"{i}/2", "id": i} for i in range(20)]
    write(tmp_path / f"raw{ext}", rows)
    blend = write_blend(tmp_path, [{"name": "d", "path": f"raw{ext}", "agent_ref": "math"}])
    prep(blend, tmp_path / "out", train_ratio=1.0, val_ratio=0.0)
    out = read_split(tmp_path / "out", "train")
    assert sorted(r["id"] for r in out) == list(range(20))  # int: an all-integer CSV column
    assert {r["expected_answer"] for r in out} == {f"{i}/2" for i in range(20)}


def test_rl_prep_csv_with_a_ragged_row_is_e_csv_at_its_line(tmp_path: Path) -> None:
    from test_rl_prep import prep, write_blend

    from catalog.errors import StepsError

    (tmp_path / "raw.csv").write_text("question,expected_answer\nq,1\nq, 2,3\n", encoding="utf-8")
    blend = write_blend(tmp_path, [{"name": "d", "path": "raw.csv", "agent_ref": "math"}])
    with pytest.raises(StepsError) as exc:
        prep(blend, tmp_path / "out")
    f = exc.value.finding
    assert (f.code, f.path, f.line) == ("E-CSV", str(tmp_path / "raw.csv"), 3)


def test_a_pyarrow_without_parquets_schema_depth_keyword_is_not_given_it():
    """pyarrow 25 and older (all Python 3.10 has) know no schema_depth_limit: passing it crashed
    every Parquet read there; pyarrow 26 gets the deeper limit."""
    from catalog.contracts import columnar

    def parquet_file_25(source, *, metadata=None, thrift_container_size_limit=None):
        """ParquetFile's keywords before pyarrow 26 (a few of them)."""

    assert columnar._depth_limit(parquet_file_25) == {}
    has = "schema_depth_limit" in str(inspect.signature(pq.ParquetFile))
    assert columnar._depth_limit(pq.ParquetFile) == ({"schema_depth_limit": 512} if has else {})
