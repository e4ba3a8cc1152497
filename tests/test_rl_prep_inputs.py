"""data_prep/rl_prep: transforms, input formats (JSONL, Parquet, Arrow, hf://), bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_rl_prep import config, gym_row, prep, read_split, write_blend, write_jsonl

from catalog.errors import StepsError
from catalog.tomlfile import load_toml
from runners.rl_prep import run_step

STEP = Path(__file__).resolve().parents[1] / "steps" / "data_prep" / "rl_prep"


def all_rows(out: Path) -> list[dict]:
    return [r for s in ("train", "val", "test") for r in read_split(out, s)]


def prep_one(tmp_path: Path, rows: list, dataset: dict | None = None, **over) -> list[dict]:
    write_jsonl(tmp_path / "in.jsonl", rows)
    blend = write_blend(tmp_path, [{"name": "d", "path": "in.jsonl", **(dataset or {})}])
    prep(blend, tmp_path / "out", train_ratio=1.0, val_ratio=0.0, **over)
    return read_split(tmp_path / "out", "train")


@pytest.mark.parametrize(
    ("field", "value", "expected_input"),
    [
        ("question", "2+2?", [{"role": "user", "content": "2+2?"}]),
        ("problem", "Solve x.", [{"role": "user", "content": "Solve x."}]),
        ("prompt", "Hi", [{"role": "user", "content": "Hi"}]),
        ("input", "Say hi", [{"role": "user", "content": "Say hi"}]),
        (
            "messages",
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        ),
    ],
)
def test_nemo_gym_builds_the_request_from_a_prompt_field_and_keeps_every_field(
    tmp_path: Path, field: str, value, expected_input: list
):
    row = {field: value, "expected_answer": "4", "verifier_metadata": {"k": 1}, "id": 7}
    (out,) = prep_one(tmp_path, [row], {"agent_ref": "math_agent", "transform": "nemo_gym"})
    assert out["responses_create_params"] == {"input": expected_input}
    assert out["agent_ref"] == {"type": "responses_api_agents", "name": "math_agent"}
    assert {k: out[k] for k in row} == row


def test_nemo_gym_turns_chat_tools_into_flat_responses_tools(tmp_path: Path):
    tool = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}
    row = {"messages": [{"role": "user", "content": "1+1"}], "tools": [tool]}
    (out,) = prep_one(tmp_path, [row], {"agent_ref": "a"})
    assert out["responses_create_params"]["tools"] == [
        {"type": "function", "name": "add", "parameters": {"type": "object"}, "strict": False}
    ]


def test_nemo_gym_keeps_an_existing_agent_ref_over_the_dataset_default(tmp_path: Path):
    row = gym_row(1, agent="own_agent")
    line = json.dumps(row)
    (out,) = prep_one(tmp_path, [line], {"agent_ref": "default_agent"})
    assert out["agent_ref"]["name"] == "own_agent"
    assert (tmp_path / "out" / "train" / "shard_000000.jsonl").read_text() == line + "\n"


def test_nemo_gym_row_without_prompt_or_agent_fails_its_contract_with_location(tmp_path: Path):
    write_jsonl(tmp_path / "in.jsonl", [gym_row(0), {"question": "no agent here"}])
    blend = write_blend(tmp_path, [{"name": "d", "path": "in.jsonl"}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    f = err.value.finding
    assert (f.code, f.path, f.line) == ("E-GYM-AGENT-REF", str(tmp_path / "in.jsonl"), 2)
    assert "on_bad_row=skip" in f.fix


def test_preference_normalizes_both_shapes_to_prompt_chosen_rejected(tmp_path: Path):
    ranked = {
        "context": [{"role": "user", "content": "Capital of France?"}],
        "completions": [
            {"rank": 1, "completion": [{"role": "assistant", "content": "Lyon."}]},
            {"rank": 0, "completion": [{"role": "assistant", "content": "Paris."}]},
        ],
        "source": "s1",
    }
    pair = {"prompt": "2+2?", "chosen": "4", "rejected": "5", "source": "s2"}
    rows = prep_one(tmp_path, [ranked, pair], output_type="preference_jsonl")
    assert rows[0] == {
        "prompt": [{"role": "user", "content": "Capital of France?"}],
        "chosen": "Paris.",
        "rejected": "Lyon.",
        "source": "s1",
    }
    assert rows[1] == pair


def test_preference_tie_is_a_dpo_row_error_at_its_line(tmp_path: Path):
    tie = {
        "context": "Q?",
        "completions": [{"rank": 0, "completion": "a"}, {"rank": 0, "completion": "b"}],
    }
    pair = {"prompt": "p", "chosen": "c", "rejected": "r"}
    write_jsonl(tmp_path / "in.jsonl", [pair, tie])
    blend = write_blend(tmp_path, [{"name": "d", "path": "in.jsonl"}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out", output_type="preference_jsonl")
    assert (err.value.finding.code, err.value.finding.line) == ("E-DPO-ROW", 2)


def test_preference_rows_failing_the_contract_are_counted_when_skipped(tmp_path: Path):
    good = {"prompt": "p", "chosen": "c", "rejected": "r"}
    rows = [
        good,
        {"prompt": "p", "chosen": "c"},
        {"context": "x", "completions": []},
    ]
    write_jsonl(tmp_path / "in.jsonl", rows)
    blend = write_blend(tmp_path, [{"name": "d", "path": "in.jsonl"}])
    summary = prep(blend, tmp_path / "out", output_type="preference_jsonl", on_bad_row="skip")
    assert summary["datasets"]["d"]["skipped"] == {"E-DPO-ROW": 2}


def test_nemotron_rl_turns_the_request_into_messages_and_keeps_other_fields(tmp_path: Path):
    row = gym_row(3)
    row["responses_create_params"]["tools"] = [{"type": "function", "name": "f"}]
    (out,) = prep_one(
        tmp_path,
        [row],
        {"transform": "nemotron_rl"},
        output_type="verifiable_prompt_jsonl",
    )
    assert out["messages"] == row["responses_create_params"]["input"]
    assert out["tools"] == [{"type": "function", "name": "f"}]
    assert "responses_create_params" not in out
    assert out["expected_answer"] == "6" and out["agent_ref"] == row["agent_ref"]


def test_passthrough_copies_rows_that_pass_the_contract(tmp_path: Path):
    lines = [json.dumps(gym_row(i)) for i in range(5)]
    prep_one(tmp_path, lines, {"transform": "passthrough"})
    assert (tmp_path / "out" / "train" / "shard_000000.jsonl").read_text() == "\n".join(
        lines
    ) + "\n"


def test_transform_that_cannot_produce_the_output_type_is_a_blend_error(tmp_path: Path):
    write_jsonl(tmp_path / "in.jsonl", [gym_row(0)])
    blend = write_blend(tmp_path, [{"name": "d", "path": "in.jsonl", "transform": "preference"}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    assert (err.value.finding.code, err.value.finding.line) == ("E-BLEND", 2)


def test_missing_input_file_is_a_blend_error_naming_the_dataset_line(tmp_path: Path):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(0)])
    blend = write_blend(
        tmp_path, [{"name": "a", "path": "a.jsonl"}, {"name": "b", "path": "nope.jsonl"}]
    )
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    f = err.value.finding
    assert (f.code, f.path, f.line) == ("E-BLEND", str(blend), 4)
    assert "nope.jsonl" in f.message
    assert not (tmp_path / "out").exists()


def test_missing_blend_file_is_a_blend_error(tmp_path: Path):
    with pytest.raises(StepsError) as err:
        prep(tmp_path / "absent.yaml", tmp_path / "out")
    assert err.value.finding.code == "E-BLEND"
    assert err.value.finding.path == str(tmp_path / "absent.yaml")


def test_unknown_transform_gets_a_did_you_mean(tmp_path: Path):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(0)])
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl", "transform": "nemogym"}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    f = err.value.finding
    assert (f.code, f.line) == ("E-BLEND", 4)
    assert "nemo_gym" in f.fix


def test_unknown_blend_key_and_duplicate_names_are_located(tmp_path: Path):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(0)])
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl", "wieght": 2}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    assert (err.value.finding.code, err.value.finding.line) == ("E-BLEND", 4)
    assert "weight" in err.value.finding.fix
    dup = write_blend(
        tmp_path, [{"name": "a", "path": "a.jsonl"}, {"name": "a", "path": "a.jsonl"}], "d.yaml"
    )
    with pytest.raises(StepsError) as err:
        prep(dup, tmp_path / "out")
    assert (err.value.finding.code, err.value.finding.line) == ("E-BLEND", 4)


def test_ratios_that_sum_past_one_are_rejected(tmp_path: Path):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(0)])
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out", train_ratio=0.9, val_ratio=0.2)
    assert (err.value.finding.code, err.value.finding.key) == ("E-CONFIG-VALUE", "train_ratio")
    in_blend = write_blend(
        tmp_path, [{"name": "a", "path": "a.jsonl"}], "r.yaml", train_ratio=0.7, val_ratio=0.5
    )
    with pytest.raises(StepsError) as err:
        prep(in_blend, tmp_path / "out")
    assert (err.value.finding.code, err.value.finding.path) == ("E-BLEND", str(in_blend))


def test_non_json_line_is_reported_with_file_and_line(tmp_path: Path):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(0), gym_row(1), '{"responses_create_params": '])
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    f = err.value.finding
    assert (f.code, f.path, f.line) == ("E-JSONL", str(tmp_path / "a.jsonl"), 3)


def test_a_line_that_is_not_utf8_is_reported_at_its_line(tmp_path: Path):
    good = [json.dumps(gym_row(i)).encode() for i in range(5)]
    bad = json.dumps(gym_row(5)).encode().replace(b'"10"', b'"1\xff0"')
    (tmp_path / "a.jsonl").write_bytes(b"\n".join([*good, bad]) + b"\n")
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    f = err.value.finding
    assert (f.code, f.line) == ("E-JSONL", 6)
    assert "UTF-8" in f.message


def test_invalid_yaml_blend_names_its_line(tmp_path: Path):
    bad = tmp_path / "blend.yaml"
    bad.write_text("datasets:\n  - name: a\n    path: [unclosed\n")
    with pytest.raises(StepsError) as err:
        prep(bad, tmp_path / "out")
    assert err.value.finding.code == "E-BLEND" and err.value.finding.line is not None


def test_json_blend_with_glob_and_directory_paths(tmp_path: Path):
    write_jsonl(tmp_path / "parts" / "p1.jsonl", [gym_row(i) for i in range(10)])
    write_jsonl(tmp_path / "parts" / "p2.jsonl", [gym_row(i) for i in range(10, 25)])
    write_jsonl(tmp_path / "folder" / "sub" / "x.jsonl", [gym_row(i) for i in range(100, 107)])
    blend = tmp_path / "blend.json"
    blend.write_text(
        json.dumps(
            {
                "datasets": [
                    {"name": "globbed", "path": "parts/*.jsonl"},
                    {"name": "folder", "path": "folder"},
                ]
            }
        )
    )
    summary = prep(blend, tmp_path / "out")
    assert sum(summary["datasets"]["globbed"][s] for s in ("train", "val", "test")) == 25
    assert sum(summary["datasets"]["folder"][s] for s in ("train", "val", "test")) == 7


def test_parquet_input_is_streamed_and_checked(tmp_path: Path):
    pa = pytest.importorskip("pyarrow", reason="Parquet support is the optional `parquet` extra")
    import pyarrow.parquet as pq

    rows = [{"question": f"q{i}", "expected_answer": str(i), "id": i} for i in range(3000)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "raw.parquet", row_group_size=500)
    blend = write_blend(
        tmp_path, [{"name": "pq", "path": "raw.parquet", "agent_ref": "math_agent"}]
    )
    summary = prep(blend, tmp_path / "out")
    assert sum(summary["rows"].values()) == 3000
    out = all_rows(tmp_path / "out")
    assert {r["id"] for r in out} == set(range(3000))
    assert out[0]["responses_create_params"]["input"][0]["role"] == "user"
    prep(blend, tmp_path / "again")
    assert all_rows(tmp_path / "again") == out


def _save_to_disk(folder: Path, rows: list[dict]) -> None:
    """The layout `datasets.Dataset.save_to_disk` writes: Arrow stream files + state.json."""
    import pyarrow as pa

    folder.mkdir(parents=True)
    table = pa.Table.from_pylist(rows)
    path = str(folder / "data-00000-of-00001.arrow")
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    state = {"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": "train"}
    (folder / "state.json").write_text(json.dumps(state))
    (folder / "dataset_info.json").write_text("{}")


def test_save_to_disk_dataset_dict_folder_is_read_by_split(tmp_path: Path):
    pytest.importorskip("pyarrow", reason="Arrow support is the optional `hf` extra")
    saved = tmp_path / "saved"
    _save_to_disk(saved / "train", [gym_row(i) for i in range(40)])
    _save_to_disk(saved / "test", [gym_row(i) for i in range(900, 905)])
    (saved / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    blend = write_blend(tmp_path, [{"name": "s", "path": "saved", "split": "test"}])
    summary = prep(blend, tmp_path / "out")
    assert {r["id"] for r in all_rows(tmp_path / "out")} == set(range(900, 905))
    assert summary["datasets"]["s"]["val"] >= 1


def test_hf_dataset_missing_from_the_local_cache_is_an_offline_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_DATASETS_CACHE"):
        monkeypatch.delenv(var, raising=False)
    blend = write_blend(tmp_path, [{"name": "nano", "path": "hf://nvidia/Some-RL-Blend"}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out")
    f = err.value.finding
    assert (f.code, f.path, f.line) == ("E-HF-OFFLINE", str(blend), 2)
    assert "huggingface-cli download --repo-type dataset nvidia/Some-RL-Blend" in f.fix
    assert "save_to_disk" in f.fix
    assert not (tmp_path / "out").exists()


def test_hf_dataset_is_read_from_a_hub_cache_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_DATASETS_CACHE"):
        monkeypatch.delenv(var, raising=False)
    repo = tmp_path / "hf" / "hub" / "datasets--org--blend"
    snap = repo / "snapshots" / "abc123"
    write_jsonl(snap / "data" / "train.jsonl", [gym_row(i) for i in range(30)])
    write_jsonl(snap / "data" / "validation.jsonl", [gym_row(i) for i in range(500, 504)])
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    blend = write_blend(tmp_path, [{"name": "hub", "path": "hf://org/blend", "split": "train"}])
    summary = prep(blend, tmp_path / "out")
    assert {r["id"] for r in all_rows(tmp_path / "out")} == set(range(30))
    assert summary["datasets"]["hub"]["val"] >= 1


def test_step_parameters_exist_in_the_default_config_with_the_same_defaults():
    manifest = load_toml(STEP / "step.toml")
    default = yaml.safe_load((STEP / "config" / "default.yaml").read_text())
    for param in manifest["parameters"]:
        assert param["name"] in default
        assert default[param["name"]] == param.get("default")
    for local in manifest["reference"]["local"]:
        assert (STEP / local).exists()


def test_tiny_blend_prepares_every_dataset_into_several_shards(tmp_path: Path):
    conf = yaml.safe_load((STEP / "config" / "tiny.yaml").read_text())
    cfg = config(STEP / "config" / conf["blend_path"], tmp_path / "tiny")
    cfg.update({k: conf[k] for k in ("train_ratio", "val_ratio", "shard_size")})
    summary = run_step(cfg, config_dir=STEP / "config")
    assert summary["shards"]["train"] > 2
    assert set(summary["datasets"]) == {"math_gym", "math_raw", "instruct_chat"}
    assert all(d["val"] >= 1 and d["skipped"] == {} for d in summary["datasets"].values())


def test_training_jsonl_output_accepts_any_object_rows(tmp_path: Path):
    rows = prep_one(tmp_path, [{"anything": 1}, {"other": [2]}], output_type="training_jsonl")
    assert rows == [{"anything": 1}, {"other": [2]}]


def test_steps_run_tiny_from_the_command_line(tmp_path: Path, monkeypatch, capsys):
    from steps.cli import main

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "tiny"
    cmd = ["run", "data_prep/rl_prep", "-c", "tiny", "--runs-dir", str(tmp_path / "runs")]
    assert main([*cmd, f"output_dir={out}"]) == 0
    summary = json.loads(capsys.readouterr().out)  # the plan and report go to stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert summary["output_dir"] == str(out) and not summary["reused"]
    assert len(manifest["splits"]["train"]["shards"]) > 2
    assert set(manifest["datasets"]) == {"math_gym", "math_raw", "instruct_chat"}
    assert main([*cmd, f"output_dir={out}"]) == 0
    assert "up to date" in capsys.readouterr().err
