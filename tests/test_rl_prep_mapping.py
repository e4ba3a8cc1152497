"""A blend maps source fields onto the row and resolves `_hf_placeholder` rows from local copies.

Files are made in the users' shapes: a DAPO-Math-style Parquet (`prompt` a chat list, the answer
in `reward_model.ground_truth`), a placeholder JSONL as NVIDIA's RL blends store it, and the
sources it points into as a hub-cache snapshot and a `save_to_disk` folder. The dry run judges
each dataset's first rows as the run does, before anything is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_rl_prep import prep, read_split, write_blend, write_jsonl
from test_rl_prep_inputs import _save_to_disk as save_to_disk_layout

from catalog.errors import StepsError
from steps.cli import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

AGENT = "math_with_judge_simple_agent"
MAP = {"question": "prompt.0.content", "expected_answer": "reward_model.ground_truth"}
WRAPPED = "Solve the problem below.\n\n{q}\n\nPut the final answer in a box."


def dapo_rows(n: int) -> list[dict]:
    return [
        {
            "data_source": "math_dapo",
            "prompt": [{"role": "user", "content": WRAPPED.format(q=f"What is {i}+{i}?")}],
            "reward_model": {"ground_truth": str(2 * i), "style": "rule-lighteval/MATH_v2"},
            "extra_info": {"index": f"id-{i}"},
        }
        for i in range(n)
    ]


def write_parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=7)
    return path


def all_rows(out: Path) -> list[dict]:
    return [r for split in ("train", "val", "test") for r in read_split(out, split)]


def dry_run(tmp_path: Path, capsys, blend: Path) -> tuple[int, list[dict]]:
    code = main(
        ["run", "data_prep/rl_prep", "--dry-run", "--json", "--runs-dir", str(tmp_path / "runs"),
         f"blend_path={blend}", f"output_dir={tmp_path / 'out'}"]
    )  # fmt: skip
    out = capsys.readouterr().out
    return code, json.loads(out)["findings"]


def test_dapo_parquet_mapped_in_the_blend_gives_rows_math_with_judge_can_score(tmp_path: Path):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(20))
    dataset = {"name": "dapo", "path": "dapo.parquet", "map": MAP, "agent_ref": AGENT}
    prep(write_blend(tmp_path, [dataset]), tmp_path / "out")
    rows = sorted(all_rows(tmp_path / "out"), key=lambda r: r["extra_info"]["index"])
    assert len(rows) == 20
    first = next(r for r in rows if r["extra_info"]["index"] == "id-3")
    assert first["question"] == WRAPPED.format(q="What is 3+3?")
    assert first["expected_answer"] == "6"
    assert first["responses_create_params"] == {"input": first["prompt"]}
    assert first["agent_ref"] == {"type": "responses_api_agents", "name": AGENT}


def test_a_dotted_target_fills_the_request_from_a_field_of_another_name(tmp_path: Path):
    rows = [{"conversation": [{"role": "user", "content": f"hi {i}"}], "gold": f"{i}"}
            for i in range(4)]  # fmt: skip
    write_jsonl(tmp_path / "chat.jsonl", rows)
    mapping = {"responses_create_params.input": "conversation", "expected_answer": "gold",
               "question": "conversation.0.content"}  # fmt: skip
    dataset = {"name": "chat", "path": "chat.jsonl", "map": mapping, "agent_ref": AGENT}
    prep(write_blend(tmp_path, [dataset]), tmp_path / "out")
    got = {r["expected_answer"]: r for r in all_rows(tmp_path / "out")}
    assert got["2"]["responses_create_params"]["input"] == [{"role": "user", "content": "hi 2"}]


def test_dry_run_names_the_dataset_field_and_path_a_source_lacks_and_writes_nothing(
    tmp_path: Path, capsys
):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(5))
    wrong = {**MAP, "expected_answer": "reward_model.answer"}
    dataset = {"name": "dapo", "path": "dapo.parquet", "map": wrong, "agent_ref": AGENT}
    code, findings = dry_run(tmp_path, capsys, write_blend(tmp_path, [dataset]))
    [f] = [f for f in findings if f["code"] == "E-BLEND-MAP"]
    assert code == 1
    assert "dataset `dapo`" in f["message"] and "expected_answer" in f["message"]
    assert "`reward_model.answer`" in f["message"] and "no key `answer`" in f["message"]
    assert f["path"] == str(tmp_path / "dapo.parquet") and f["line"] == 1
    assert not (tmp_path / "out").exists()


def test_dry_run_of_a_correct_map_is_clean(tmp_path: Path, capsys):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(5))
    dataset = {"name": "dapo", "path": "dapo.parquet", "map": MAP, "agent_ref": AGENT}
    code, findings = dry_run(tmp_path, capsys, write_blend(tmp_path, [dataset]))
    assert code == 0, findings


def test_a_map_path_that_is_not_a_dotted_path_is_an_e_blend_at_its_line(tmp_path: Path):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(2))
    dataset = {"name": "dapo", "path": "dapo.parquet", "map": {"question": "prompt..content"}}
    blend = write_blend(tmp_path, [dataset])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    f = err.value.finding
    assert f.code == "E-BLEND" and "map" in f.message and "empty or blank segment" in f.message
    assert f.line is not None


def test_rows_lacking_a_mapped_path_are_counted_under_skip(tmp_path: Path):
    rows = dapo_rows(6)
    del rows[2]["reward_model"]["ground_truth"]
    write_parquet(tmp_path / "dapo.parquet", rows)
    dataset = {"name": "dapo", "path": "dapo.parquet", "map": MAP, "agent_ref": AGENT}
    summary = prep(write_blend(tmp_path, [dataset]), tmp_path / "out", on_bad_row="skip")
    assert summary["skipped_by_code"] == {"E-BLEND-MAP": 1}


# --- _hf_placeholder rows ------------------------------------------------------------------

SOURCE = "nano_v3_sft_profiled_dapo17k"


def placeholder_rows() -> list[dict]:
    """Two rows that stand for rows 4 and 1 of the source, and one ordinary Gym row."""
    template = {"prefix": "Q: ", "suffix": "\nAnswer with a number.\n"}
    agent = {"type": "responses_api_agents", "name": AGENT}
    held = [
        {"_hf_placeholder": {"row": n, "question_template": template}, "dataset": SOURCE,
         "agent_ref": agent, "id": f"ph-{n}"}
        for n in (4, 1)
    ]  # fmt: skip
    plain = {
        "responses_create_params": {"input": [{"role": "user", "content": "1+1?"}]},
        "question": "1+1?",
        "expected_answer": "2",
        "agent_ref": agent,
        "id": "plain",
        "dataset": "other",
    }
    return [*held, plain]


def hub_snapshot(cache: Path, repo: str, rows: list[dict]) -> None:
    """What `huggingface-cli download --repo-type dataset REPO` leaves in HF_HUB_CACHE."""
    base = cache / f"datasets--{repo.replace('/', '--')}"
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text("abc123")
    write_parquet(base / "snapshots" / "abc123" / "data" / "train-00000-of-00001.parquet", rows)


def placeholder_blend(tmp_path: Path, source: dict | None) -> Path:
    write_jsonl(tmp_path / "blend_rows.jsonl", placeholder_rows())
    dataset: dict = {"name": "nano3", "path": "blend_rows.jsonl"}
    if source is not None:
        dataset["hf_placeholders"] = {SOURCE: source}
    return write_blend(tmp_path, [dataset])


def by_id(out: Path) -> dict[str, dict]:
    return {r["id"]: r for r in all_rows(out)}


def test_placeholder_rows_are_rebuilt_from_the_offline_hub_cache(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_snapshot(tmp_path / "hub", "BytedTsinghua-SIA/DAPO-Math-17k", dapo_rows(6))
    source = {"path": "hf://BytedTsinghua-SIA/DAPO-Math-17k", "template": "dapo"}
    prep(placeholder_blend(tmp_path, source), tmp_path / "out")
    rows = by_id(tmp_path / "out")
    four = rows["ph-4"]
    assert "_hf_placeholder" not in four
    assert four["question"] == "Q: What is 4+4?\nAnswer with a number."
    assert four["expected_answer"] == "8"
    assert four["responses_create_params"] == {
        "input": [{"role": "user", "content": four["question"]}]
    }
    assert rows["ph-1"]["expected_answer"] == "2" and rows["plain"]["question"] == "1+1?"


def test_placeholder_rows_are_rebuilt_from_a_save_to_disk_folder(tmp_path: Path):
    try:  # `datasets` itself when installed, else the same layout written with pyarrow
        import datasets

        datasets.Dataset.from_list(dapo_rows(6)).save_to_disk(str(tmp_path / "dapo_copy"))
    except ImportError:
        save_to_disk_layout(tmp_path / "dapo_copy", dapo_rows(6))
    source = {"path": "dapo_copy", "template": "dapo"}
    prep(placeholder_blend(tmp_path, source), tmp_path / "out")
    assert by_id(tmp_path / "out")["ph-4"]["expected_answer"] == "8"


def test_placeholder_rows_with_no_named_source_are_one_dry_run_finding(tmp_path: Path, capsys):
    code, findings = dry_run(tmp_path, capsys, placeholder_blend(tmp_path, None))
    [f] = [f for f in findings if f["severity"] == "error"]
    assert code == 1 and f["code"] == "E-HF-PLACEHOLDER"
    assert f"`{SOURCE}`" in f["message"] and "hf_placeholders" in f["fix"]


def test_a_placeholder_source_missing_from_the_caches_is_e_hf_offline(
    tmp_path: Path, capsys, monkeypatch
):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_DATASETS_CACHE", raising=False)
    source = {"path": "hf://BytedTsinghua-SIA/DAPO-Math-17k"}
    code, findings = dry_run(tmp_path, capsys, placeholder_blend(tmp_path, source))
    [f] = [f for f in findings if f["severity"] == "error"]
    assert code == 1 and f["code"] == "E-HF-OFFLINE" and "huggingface-cli download" in f["fix"]


def test_a_placeholder_row_past_the_end_of_its_source_is_refused_at_its_line(tmp_path: Path):
    write_parquet(tmp_path / "dapo.parquet", dapo_rows(3))  # row 4 is not there
    blend = placeholder_blend(tmp_path, {"path": "dapo.parquet", "template": "dapo"})
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    f = err.value.finding
    assert f.code == "E-HF-PLACEHOLDER" and "row 4" in f.message and f.line == 1


def test_an_unknown_key_in_a_placeholder_source_is_located(tmp_path: Path):
    blend = placeholder_blend(tmp_path, {"path": "x.parquet", "questoin": "a"})
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    f = err.value.finding
    assert f.code == "E-BLEND" and "questoin" in f.message and "question" in (f.fix or "")
    assert yaml.safe_load(blend.read_text())  # the blend itself is fine YAML
