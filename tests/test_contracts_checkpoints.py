"""Checkpoint contracts on real folders: HF, Megatron torch_dist iters, NeMo-RL run dirs."""

from __future__ import annotations

import json
import struct

from catalog.contracts import validate_artifact


def safetensors(path):
    header = b'{"__metadata__": {}}'
    path.write_bytes(struct.pack("<Q", len(header)) + header)


def hf_folder(
    root, shards=("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
):
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text('{"model_type": "llama"}')
    (root / "tokenizer.json").write_text("{}")
    for s in shards:
        safetensors(root / s)
    index = {"weight_map": {f"w{i}": s for i, s in enumerate(shards)}}
    (root / "model.safetensors.index.json").write_text(json.dumps(index))
    return root


def messages(report):
    return [(f.code, f.message) for f in report.findings]


def test_complete_hf_folder_passes(tmp_path):
    assert validate_artifact("hf_checkpoint", hf_folder(tmp_path / "m")).ok


def test_hf_shard_named_in_index_but_missing_is_reported(tmp_path):
    m = hf_folder(tmp_path / "m")
    (m / "model-00002-of-00002.safetensors").unlink()
    report = validate_artifact("hf_checkpoint", m)
    assert [f.code for f in report.findings] == ["E-HF-CHECKPOINT"]
    assert "model-00002-of-00002.safetensors, which is missing" in report.findings[0].message


def test_hf_stray_shard_and_missing_tokenizer_and_truncated_file_are_reported(tmp_path):
    m = hf_folder(tmp_path / "m")
    safetensors(m / "model-00003-of-00003.safetensors")
    (m / "tokenizer.json").unlink()
    (m / "model-00001-of-00002.safetensors").write_bytes(b"\x00\x01")
    text = " | ".join(msg for _, msg in messages(validate_artifact("hf_checkpoint", m)))
    assert "not named in model.safetensors.index.json" in text
    assert "no tokenizer files" in text
    assert "truncated" in text


def test_hf_hub_id_is_accepted_with_a_note_only_when_allowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert not validate_artifact("hf_checkpoint", "meta-llama/Llama-3.2-1B").ok
    report = validate_artifact("hf_checkpoint", "meta-llama/Llama-3.2-1B", allow_hub_id=True)
    assert report.ok and [f.code for f in report.findings] == ["W-HF-HUB-ID"]


def megatron_iter(path, torch_dist=True):
    path.mkdir(parents=True)
    (path / "metadata.json").write_text('{"sharded_backend": "torch_dist"}')
    if torch_dist:
        (path / ".metadata").write_bytes(b"x")
        (path / "__0_0.distcp").write_bytes(b"x")


def test_megatron_latest_iter_is_chosen_by_number_or_tracker(tmp_path):
    megatron_iter(tmp_path / "iter_0000100")
    megatron_iter(tmp_path / "iter_0000020")
    report = validate_artifact("megatron_checkpoint", tmp_path)
    assert report.ok and report.resolved == str(tmp_path / "iter_0000100")
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("20\n")
    assert validate_artifact("megatron_checkpoint", tmp_path).resolved == str(
        tmp_path / "iter_0000020"
    )


def test_megatron_iter_without_dcp_metadata_is_reported(tmp_path):
    megatron_iter(tmp_path / "iter_0000001", torch_dist=False)
    report = validate_artifact("megatron_checkpoint", tmp_path)
    assert [f.code for f in report.findings] == ["E-MEGATRON-CHECKPOINT"]
    assert ".metadata" in report.findings[0].message


def test_megatron_tracker_naming_a_missing_iter_is_reported(tmp_path):
    megatron_iter(tmp_path / "iter_0000001")
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("5")
    assert [f.code for f in validate_artifact("megatron_checkpoint", tmp_path).findings] == [
        "E-MEGATRON-CHECKPOINT"
    ]


def nemo_rl_step(root, n):
    step = root / f"step_{n}"
    megatron_iter(step / "policy" / "weights" / "iter_0000000")
    (step / "training_info.json").write_text(json.dumps({"step": n}))
    (step / "config.yaml").write_text("grpo: {}\n")
    return step


def test_nemo_rl_run_dir_uses_the_latest_complete_step_and_ignores_tmp_steps(tmp_path):
    nemo_rl_step(tmp_path, 10)
    nemo_rl_step(tmp_path, 20)
    (tmp_path / "tmp_step_30").mkdir()
    report = validate_artifact("nemo_rl_checkpoint", tmp_path)
    assert report.ok and report.resolved == str(tmp_path / "step_20")
    mega = validate_artifact("megatron_checkpoint", tmp_path)
    assert mega.ok
    assert mega.resolved == str(tmp_path / "step_20" / "policy" / "weights" / "iter_0000000")


def test_nemo_rl_step_missing_training_info_and_only_tmp_steps_are_reported(tmp_path):
    step = nemo_rl_step(tmp_path / "a", 5)
    (step / "training_info.json").unlink()
    report = validate_artifact("nemo_rl_checkpoint", tmp_path / "a")
    assert [f.code for f in report.findings] == ["E-NEMO-RL-CHECKPOINT"]
    (tmp_path / "b" / "tmp_step_3").mkdir(parents=True)
    report = validate_artifact("nemo_rl_checkpoint", tmp_path / "b")
    assert "tmp_step_3" in report.findings[0].message
