"""data_prep/rl_prep: splits, weights, shards, manifest, reuse and atomicity, on real files."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from catalog.errors import StepsError
from runners.rl_prep import build, run_step
from runners.rl_prep.output import host_name


def gym_row(i: int, agent: str = "math_agent", **extra) -> dict:
    return {
        "responses_create_params": {"input": [{"role": "user", "content": f"What is {i} + {i}?"}]},
        "agent_ref": {"type": "responses_api_agents", "name": agent},
        "question": f"What is {i} + {i}?",
        "expected_answer": str(2 * i),
        "id": i,
        **extra,
    }


def write_jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    return path


def write_blend(folder: Path, datasets: list[dict], name: str = "blend.yaml", **top) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({**top, "datasets": datasets}, sort_keys=False))
    return path


def config(blend: Path, out: Path, **over) -> dict:
    base = {
        "blend_path": str(blend),
        "output_dir": str(out),
        "output_type": "nemo_gym_jsonl",
        "train_ratio": 0.98,
        "val_ratio": 0.01,
        "shard_size": "256MB",
        "seed": 1234,
        "sample": None,
        "on_bad_row": "error",
        "force": False,
    }
    return {**base, **over}


def prep(blend: Path, out: Path, **over) -> dict:
    return run_step(config(blend, out, **over), config_dir=blend.parent)


def read_split(out: Path, split: str) -> list[dict]:
    manifest = json.loads((out / "manifest.json").read_text())
    rows = []
    for shard in manifest["splits"][split]["shards"]:
        rows += [json.loads(line) for line in (out / shard["path"]).read_text().splitlines()]
    return rows


def tree_bytes(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture
def two_datasets(tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "a.jsonl", [gym_row(i) for i in range(300)])
    write_jsonl(tmp_path / "b.jsonl", [gym_row(i, "other_agent") for i in range(300, 500)])
    return write_blend(
        tmp_path, [{"name": "a", "path": "a.jsonl"}, {"name": "b", "path": "b.jsonl"}]
    )


def test_same_blend_and_inputs_give_byte_identical_outputs(two_datasets: Path, tmp_path: Path):
    prep(two_datasets, tmp_path / "out1", shard_size="8KB")
    prep(two_datasets, tmp_path / "out2", shard_size="8KB")
    first, second = tree_bytes(tmp_path / "out1"), tree_bytes(tmp_path / "out2")
    assert len(first) > 5
    assert first == second


def test_output_does_not_depend_on_file_or_dataset_order(tmp_path: Path):
    write_jsonl(tmp_path / "p1.jsonl", [gym_row(i) for i in range(100)])
    write_jsonl(tmp_path / "p2.jsonl", [gym_row(i) for i in range(100, 200)])
    write_jsonl(tmp_path / "q.jsonl", [gym_row(i, "q_agent") for i in range(200, 260)])
    forward = write_blend(
        tmp_path,
        [
            {"name": "p", "path": ["p1.jsonl", "p2.jsonl"]},
            {"name": "q", "path": "q.jsonl"},
        ],
        name="forward.yaml",
    )
    backward = write_blend(
        tmp_path,
        [
            {"name": "q", "path": "q.jsonl"},
            {"name": "p", "path": ["p2.jsonl", "p1.jsonl"]},
        ],
        name="backward.yaml",
    )
    prep(forward, tmp_path / "f", shard_size="4KB")
    prep(backward, tmp_path / "b", shard_size="4KB")
    shards_f = {k: v for k, v in tree_bytes(tmp_path / "f").items() if k != "manifest.json"}
    shards_b = {k: v for k, v in tree_bytes(tmp_path / "b").items() if k != "manifest.json"}
    assert shards_f == shards_b


def test_splits_are_disjoint_and_cover_every_row(two_datasets: Path, tmp_path: Path):
    out = tmp_path / "out"
    prep(two_datasets, out, train_ratio=0.7, val_ratio=0.15)
    ids = {s: [r["id"] for r in read_split(out, s)] for s in ("train", "val", "test")}
    assert all(len(v) == len(set(v)) for v in ids.values())
    train, val, test = (set(ids[s]) for s in ("train", "val", "test"))
    assert not (train & val) and not (train & test) and not (val & test)
    assert train | val | test == set(range(500))


def test_every_dataset_has_a_validation_row_even_when_the_ratio_rounds_to_none(tmp_path: Path):
    datasets = []
    for k in range(4):
        write_jsonl(
            tmp_path / f"d{k}.jsonl", [gym_row(1000 * k + i, f"agent{k}") for i in range(12)]
        )
        datasets.append({"name": f"d{k}", "path": f"d{k}.jsonl"})
    blend = write_blend(tmp_path, datasets)
    summary = prep(blend, tmp_path / "out", val_ratio=0.01)
    val_agents = {r["agent_ref"]["name"] for r in read_split(tmp_path / "out", "val")}
    assert val_agents == {"agent0", "agent1", "agent2", "agent3"}
    assert all(d["val"] == 1 for d in summary["datasets"].values())
    assert all(d["train"] + d["test"] == 11 for d in summary["datasets"].values())


def test_split_ratios_are_followed_per_dataset(tmp_path: Path):
    write_jsonl(tmp_path / "big.jsonl", [gym_row(i) for i in range(5000)])
    blend = write_blend(tmp_path, [{"name": "big", "path": "big.jsonl"}])
    rows = prep(blend, tmp_path / "out", train_ratio=0.8, val_ratio=0.1)["rows"]
    assert sum(rows.values()) == 5000
    assert abs(rows["train"] / 5000 - 0.8) < 0.03
    assert abs(rows["val"] / 5000 - 0.1) < 0.02
    assert abs(rows["test"] / 5000 - 0.1) < 0.02


def test_a_rows_split_depends_on_its_content_and_the_seed_only(tmp_path: Path):
    write_jsonl(tmp_path / "x.jsonl", [gym_row(i) for i in range(400)])
    write_jsonl(tmp_path / "x_more.jsonl", [gym_row(i) for i in range(400, 800)])
    write_jsonl(tmp_path / "y.jsonl", [gym_row(i, "y") for i in range(9000, 9100)])
    alone = write_blend(tmp_path, [{"name": "x", "path": "x.jsonl"}], name="alone.yaml")
    crowded = write_blend(
        tmp_path,
        [{"name": "x", "path": ["x_more.jsonl", "x.jsonl"]}, {"name": "y", "path": "y.jsonl"}],
        name="crowded.yaml",
    )
    opts = {"train_ratio": 0.6, "val_ratio": 0.2}
    prep(alone, tmp_path / "alone", **opts)
    prep(crowded, tmp_path / "crowded", **opts)
    prep(alone, tmp_path / "reseeded", seed=99, **opts)

    def split_of(out: Path) -> dict[int, str]:
        return {
            r["id"]: s
            for s in ("train", "val", "test")
            for r in read_split(out, s)
            if r["id"] < 400
        }

    assert split_of(tmp_path / "alone") == split_of(tmp_path / "crowded")
    assert split_of(tmp_path / "alone") != split_of(tmp_path / "reseeded")


def test_weight_repeats_train_rows_and_never_held_out_rows(tmp_path: Path):
    write_jsonl(tmp_path / "d.jsonl", [gym_row(i) for i in range(400)])
    blend = write_blend(tmp_path, [{"name": "d", "path": "d.jsonl", "weight": 2}], name="w2.yaml")
    one = write_blend(tmp_path, [{"name": "d", "path": "d.jsonl"}], name="w1.yaml")
    opts = {"train_ratio": 0.7, "val_ratio": 0.15}
    prep(one, tmp_path / "w1", **opts)
    prep(blend, tmp_path / "w2", **opts)
    base = [r["id"] for r in read_split(tmp_path / "w1", "train")]
    doubled = [r["id"] for r in read_split(tmp_path / "w2", "train")]
    assert sorted(doubled) == sorted(base * 2)
    for split in ("val", "test"):
        assert read_split(tmp_path / "w1", split) == read_split(tmp_path / "w2", split)


def test_fractional_weight_keeps_a_deterministic_subset_of_train(tmp_path: Path):
    write_jsonl(tmp_path / "d.jsonl", [gym_row(i) for i in range(2000)])
    half = write_blend(tmp_path, [{"name": "d", "path": "d.jsonl", "weight": 0.5}], name="h.yaml")
    one = write_blend(tmp_path, [{"name": "d", "path": "d.jsonl"}], name="one.yaml")
    zero = write_blend(tmp_path, [{"name": "d", "path": "d.jsonl", "weight": 0}], name="z.yaml")
    prep(one, tmp_path / "one")
    full = {r["id"] for r in read_split(tmp_path / "one", "train")}
    prep(half, tmp_path / "h1")
    prep(half, tmp_path / "h2")
    kept = [r["id"] for r in read_split(tmp_path / "h1", "train")]
    assert kept == [r["id"] for r in read_split(tmp_path / "h2", "train")]
    assert set(kept) < full
    assert abs(len(kept) / len(full) - 0.5) < 0.05
    assert prep(zero, tmp_path / "z")["rows"]["train"] == 0


def test_sample_reads_only_the_first_rows_of_each_dataset(two_datasets: Path, tmp_path: Path):
    summary = prep(two_datasets, tmp_path / "out", sample=50)
    assert sum(summary["rows"].values()) == 100
    ids = {r["id"] for s in ("train", "val", "test") for r in read_split(tmp_path / "out", s)}
    assert ids == set(range(50)) | set(range(300, 350))


def test_per_dataset_sample_in_the_blend(tmp_path: Path):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(i) for i in range(100)])
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl", "sample": 10}])
    assert sum(prep(blend, tmp_path / "out")["rows"].values()) == 10


def test_shards_roll_over_at_the_size_and_never_cut_a_row(two_datasets: Path, tmp_path: Path):
    out = tmp_path / "out"
    summary = prep(two_datasets, out, shard_size="2KB")
    assert summary["shards"]["train"] > 10
    manifest = json.loads((out / "manifest.json").read_text())
    for shard in manifest["splits"]["train"]["shards"]:
        data = (out / shard["path"]).read_bytes()
        assert len(data) <= 2000
        assert all(json.loads(line) for line in data.splitlines())
    names = [s["path"] for s in manifest["splits"]["train"]["shards"]]
    assert names[:2] == ["train/shard_000000.jsonl", "train/shard_000001.jsonl"]


def test_shard_size_accepts_binary_units_and_rejects_nonsense(two_datasets: Path, tmp_path: Path):
    out = tmp_path / "out"
    assert prep(two_datasets, out, shard_size="1KiB")["shards"]["train"] > 50
    with pytest.raises(StepsError) as err:
        prep(two_datasets, tmp_path / "bad", shard_size="lots")
    assert err.value.finding.code == "E-CONFIG-VALUE"
    assert err.value.finding.key == "shard_size"


def test_manifest_lists_every_shard_with_true_rows_bytes_and_sha256(
    two_datasets: Path, tmp_path: Path
):
    out = tmp_path / "out"
    prep(two_datasets, out, shard_size="3KB", train_ratio=0.8, val_ratio=0.1)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["version"] == 1 and manifest["tool"].startswith("steps ")
    assert manifest["output_type"] == "nemo_gym_jsonl"
    assert manifest["blend_sha256"] == hashlib.sha256(two_datasets.read_bytes()).hexdigest()
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*.jsonl")}
    listed = set()
    for name, split in manifest["splits"].items():
        assert split["rows"] == sum(s["rows"] for s in split["shards"])
        assert split["bytes"] == sum(s["bytes"] for s in split["shards"])
        for shard in split["shards"]:
            data = (out / shard["path"]).read_bytes()
            assert shard["path"].startswith(f"{name}/")
            assert shard["bytes"] == len(data)
            assert shard["rows"] == data.count(b"\n")
            assert shard["sha256"] == hashlib.sha256(data).hexdigest()
            listed.add(shard["path"])
    assert listed == on_disk
    for ds in ("a", "b"):
        counts = manifest["datasets"][ds]
        assert counts["train"] + counts["val"] + counts["test"] == counts["read"]
        assert counts["skipped"] == {}


def test_up_to_date_output_is_reused_and_force_redoes_it(two_datasets: Path, tmp_path: Path):
    out = tmp_path / "out"
    first = prep(two_datasets, out)
    assert first["reused"] is False
    assert prep(two_datasets, out)["reused"] is True
    assert prep(two_datasets, out, force=True)["reused"] is False
    assert run_step(config(two_datasets, out), config_dir=tmp_path, force=True)["reused"] is False
    assert prep(two_datasets, out, seed=7)["reused"] is False


def test_a_changed_input_file_invalidates_the_output(two_datasets: Path, tmp_path: Path):
    out = tmp_path / "out"
    prep(two_datasets, out)
    write_jsonl(tmp_path / "b.jsonl", [gym_row(i, "other_agent") for i in range(300, 510)])
    summary = prep(two_datasets, out)
    assert summary["reused"] is False
    assert sum(summary["rows"].values()) == 510


def test_a_damaged_output_is_not_reused(two_datasets: Path, tmp_path: Path):
    out = tmp_path / "out"
    prep(two_datasets, out)
    shard = out / "train" / "shard_000000.jsonl"
    shard.write_bytes(shard.read_bytes()[:100])
    assert prep(two_datasets, out)["reused"] is False
    assert json.loads((out / "manifest.json").read_text())["splits"]["train"]["rows"] > 400


def test_failed_run_leaves_no_manifest_and_no_visible_half_output(tmp_path: Path):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(i) for i in range(200)])
    rows = [gym_row(i) for i in range(200, 300)]
    rows[60] = {"question": 17}
    write_jsonl(tmp_path / "z.jsonl", rows)
    blend = write_blend(
        tmp_path, [{"name": "a", "path": "a.jsonl"}, {"name": "z", "path": "z.jsonl"}]
    )
    out = tmp_path / "prepared" / "out"
    with pytest.raises(StepsError) as err:
        prep(blend, out, shard_size="1KB")
    assert err.value.finding.code == "E-GYM-ROW"
    assert err.value.finding.path == str(tmp_path / "z.jsonl")
    assert err.value.finding.line == 61
    assert not out.exists()
    assert list((tmp_path / "prepared").iterdir()) == []


def test_failed_rerun_keeps_the_previous_complete_output(tmp_path: Path):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(i) for i in range(200)])
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    out = tmp_path / "out"
    prep(blend, out)
    before = tree_bytes(out)
    write_jsonl(tmp_path / "a.jsonl", [gym_row(i) for i in range(200)] + ["{not json"])
    with pytest.raises(StepsError) as err:
        prep(blend, out)
    assert (err.value.finding.code, err.value.finding.line) == ("E-JSONL", 201)
    assert tree_bytes(out) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_work_folders_of_this_hosts_dead_runs_are_removed_and_no_other_work(
    two_datasets: Path, tmp_path: Path, capsys: pytest.CaptureFixture
):
    # The output may sit on a filesystem shared by several hosts: a folder is removed only when
    # its name says it is this host's and its process is gone.
    here = host_name()
    dead = tmp_path / f".out.partial-{here}-999999999"  # above any Linux pid_max
    dead_old = tmp_path / f".out.old-{here}-999999998"
    live = tmp_path / f".out.partial-{here}-{os.getppid()}"
    other_host = tmp_path / ".out.partial-node17.cluster-999999999"
    for folder in (dead, dead_old, live, other_host):
        (folder / "train").mkdir(parents=True)
        (folder / "train" / "shard_000000.jsonl").write_text("{}\n")
    summary = prep(two_datasets, tmp_path / "out")
    assert not dead.exists() and not dead_old.exists()
    assert live.is_dir() and other_host.is_dir()
    assert summary["work_left_for_other_hosts"] == [str(other_host)]
    assert f"left {other_host} alone" in capsys.readouterr().err


def test_output_dir_that_rl_prep_did_not_write_is_not_replaced(two_datasets: Path, tmp_path: Path):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(StepsError) as err:
        prep(two_datasets, out)
    assert err.value.finding.code == "E-OUTPUT-DIR"
    assert (out / "notes.txt").read_text() == "keep me"


def test_skip_drops_bad_rows_and_counts_them_per_code(tmp_path: Path):
    rows = [gym_row(i) for i in range(50)]
    rows[3] = "not json at all"
    rows[7] = "[1, 2]"
    rows[9] = {"id": 9, "note": "no prompt field"}
    rows[11] = {"id": 11, "question": "no agent"}
    write_jsonl(tmp_path / "a.jsonl", rows)
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    summary = prep(blend, tmp_path / "out", on_bad_row="skip")
    assert summary["datasets"]["a"]["skipped"] == {
        "E-GYM-AGENT-REF": 1,
        "E-GYM-ROW": 1,
        "E-JSONL": 2,
    }
    assert sum(summary["rows"].values()) == 46
    assert summary["skipped"] == 4


def test_on_bad_row_must_be_error_or_skip(two_datasets: Path, tmp_path: Path):
    with pytest.raises(StepsError) as err:
        prep(two_datasets, tmp_path / "out", on_bad_row="ignore")
    assert (err.value.finding.code, err.value.finding.key) == ("E-CONFIG-VALUE", "on_bad_row")


def test_relative_paths_resolve_against_the_config_folder(tmp_path: Path):
    data = tmp_path / "data"
    write_jsonl(data / "a.jsonl", [gym_row(i) for i in range(20)])
    write_blend(data, [{"name": "a", "path": "a.jsonl"}])
    conf = tmp_path / "config"
    conf.mkdir()
    cfg = config(Path("../data/blend.yaml"), Path("../out"))
    summary = run_step(cfg, config_dir=conf)
    assert summary["output_dir"] == str((tmp_path / "out").resolve())
    assert Path(summary["manifest"]).is_file()


def test_blend_may_set_seed_ratios_and_shard_size(tmp_path: Path):
    write_jsonl(tmp_path / "a.jsonl", [gym_row(i) for i in range(1000)])
    blend = write_blend(
        tmp_path,
        [{"name": "a", "path": "a.jsonl"}],
        train_ratio=0.5,
        val_ratio=0.25,
        shard_size="5KB",
        seed=5,
    )
    out = tmp_path / "out"
    rows = prep(blend, out)["rows"]
    assert abs(rows["train"] / 1000 - 0.5) < 0.05
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["shard_size"] == 5000
    assert manifest["options"]["seed"] == 5


def test_empty_input_lines_are_ignored_and_rows_keep_their_bytes(tmp_path: Path):
    line = json.dumps(gym_row(1), indent=None, separators=(", ", ": "))
    (tmp_path / "a.jsonl").write_text(f"\n{line}\n\n   \n")
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    out = tmp_path / "out"
    prep(blend, out, train_ratio=1.0, val_ratio=0.0)
    assert (out / "train" / "shard_000000.jsonl").read_text() == line + "\n"


def test_pid_named_work_folder_is_hidden_beside_output(two_datasets: Path, tmp_path: Path):
    out = tmp_path / "out"
    prep(two_datasets, out)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["out"]
    assert os.listdir(out) and "manifest.json" in os.listdir(out)


def test_worker_processes_write_the_same_bytes_as_one_process(tmp_path: Path):
    pad = "x" * 4000  # ~12 MB in all: several 4 MB chunks, so chunk order and merging matter
    write_jsonl(tmp_path / "a.jsonl", [gym_row(i, pad=pad) for i in range(3000)])
    write_jsonl(tmp_path / "b.jsonl", [gym_row(i, "b", pad=pad) for i in range(3000, 3100)])
    blend = write_blend(
        tmp_path,
        [{"name": "a", "path": "a.jsonl", "weight": 1.5}, {"name": "b", "path": "b.jsonl"}],
    )
    opts = {"val_ratio": 0.0001, "shard_size": "3MB"}
    one = prep(blend, tmp_path / "one", workers=1, **opts)
    two = prep(blend, tmp_path / "two", workers=2, **opts)
    assert tree_bytes(tmp_path / "one") == tree_bytes(tmp_path / "two")
    assert one["rows"] == two["rows"]
    assert one["datasets"]["a"]["val"] >= 1 and one["datasets"]["b"]["val"] >= 1
    assert one["shards"]["train"] >= 4


@pytest.mark.parametrize("workers", [1, 2])
def test_kept_rows_are_their_source_lines_and_changed_rows_are_reserialized(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
):
    monkeypatch.setattr(build, "CHUNK_BYTES", 700)  # many chunks, rows across every cut
    no_agent = gym_row(7)
    del no_agent["agent_ref"]
    lines = [json.dumps(gym_row(i), separators=(", ", ": ")) for i in range(40)]
    lines[3] += "\r"  # CRLF ending: written with a plain newline
    lines[5] = "  " + lines[5] + "  "  # padded: written without the padding
    lines[9] = json.dumps(no_agent)  # gets the dataset's agent_ref: re-serialized
    (tmp_path / "a.jsonl").write_bytes(("\n".join(lines)).encode())  # no final newline
    blend = write_blend(
        tmp_path,
        [{"name": "a", "path": "a.jsonl", "agent_ref": {"name": "math_agent"}}],
    )
    out = tmp_path / "out"
    prep(blend, out, train_ratio=1.0, val_ratio=0.0, workers=workers)
    filled = {**no_agent, "agent_ref": {"type": "responses_api_agents", "name": "math_agent"}}
    expected = [line.strip() for line in lines]
    expected[9] = json.dumps(filled, ensure_ascii=False, separators=(",", ":"))
    assert (out / "train" / "shard_000000.jsonl").read_text() == "\n".join(expected) + "\n"


def test_a_bad_row_deep_in_a_file_is_reported_at_its_line_in_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(build, "CHUNK_BYTES", 1000)
    rows: list = [gym_row(i) for i in range(60)]
    rows[47] = '{"responses_create_params": {"input": ""}, "agent_ref": {"name": "a"}}'
    write_jsonl(tmp_path / "a.jsonl", [*rows[:20], "", *rows[20:]])  # a blank line counts
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    with pytest.raises(StepsError) as err:
        prep(blend, tmp_path / "out", workers=2)
    f = err.value.finding
    assert (f.code, f.path, f.line) == ("E-GYM-ROW", str(tmp_path / "a.jsonl"), 49)
    assert not (tmp_path / "out").exists()


def test_each_source_line_is_written_once_and_held_out_splits_keep_file_order(tmp_path: Path):
    # ~2 MB of short rows split 50/25/25: thousands of runs per split in a chunk, more than
    # one writev takes at once. Train is in file order too, but for the rows held back as the
    # dataset's val candidate (see build.py), which are written after their chunk.
    lines = [json.dumps({**gym_row(i), "agent_ref": {"name": "a"}}) for i in range(12000)]
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl"}])
    out = tmp_path / "out"
    summary = prep(blend, out, train_ratio=0.5, val_ratio=0.25, workers=2)
    manifest = json.loads((out / "manifest.json").read_text())
    position = {line: n for n, line in enumerate(lines)}
    seen: list[str] = []
    for split in ("train", "val", "test"):
        got = [
            line
            for shard in manifest["splits"][split]["shards"]
            for line in (out / shard["path"]).read_text().splitlines()
        ]
        assert len(got) == summary["rows"][split] > 2000
        order = [position[line] for line in got]
        if split != "train":
            assert order == sorted(order)
        seen += got
    assert sorted(seen) == sorted(lines)


# Run in a child process: rl_prep through the real CLI, killed with SIGKILL by its own hand
# the moment it opens its third shard, so the kill always lands mid-write (no race with a
# run that finishes first).
KILLED_AT_SHARD_2 = """
import os, signal, sys
from runners.rl_prep.shards import SplitWriter
roll = SplitWriter._roll
def roll_then_die(self):
    roll(self)
    if self.shards[-1]["path"].endswith("shard_000002.jsonl"):
        os.kill(os.getpid(), signal.SIGKILL)
SplitWriter._roll = roll_then_die
from steps.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow  # a child process is killed mid-write
def test_a_killed_run_leaves_no_manifest_and_the_next_run_writes_every_row_once(tmp_path: Path):
    rows = [{k: v for k, v in gym_row(i).items() if k != "agent_ref"} for i in range(2000)]
    write_jsonl(tmp_path / "a.jsonl", rows)
    blend = write_blend(tmp_path, [{"name": "a", "path": "a.jsonl", "agent_ref": "math_agent"}])
    out = tmp_path / "out"
    overrides = [f"blend_path={blend}", f"output_dir={out}", "shard_size=64KB"]
    cmd = [sys.executable, "-c", KILLED_AT_SHARD_2, "run", "data_prep/rl_prep", *overrides]
    cmd += ["--runs-dir", str(tmp_path / "runs")]
    killed = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not out.exists()  # the half-written work is hidden, and nothing claims it is done
    (left,) = tmp_path.glob(".out.partial-*")
    assert (left / "train" / "shard_000001.jsonl").is_file()

    summary = prep(blend, out, shard_size="64KB")
    assert not list(tmp_path.glob(".out.*"))  # the killed run's work folder is gone
    assert summary["shards"]["train"] > 2
    ids = [r["id"] for s in ("train", "val", "test") for r in read_split(out, s)]
    assert sorted(ids) == list(range(2000))
