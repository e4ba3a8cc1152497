"""W&B lineage: each stage's outputs become artifacts, read back from the offline run files."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from pipeline_toys import REPO, stand_ins, steps_cli

pytestmark = pytest.mark.slow  # `pipeline run` runs each stage in a child process

BLOCK = 32768


def offline_records(path: Path) -> list:
    """Records of a `.wandb` file (W&B's LevelDB-style log: 7-byte header, 32 KiB blocks)."""
    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, pending, out = 7, b"", []
    while pos + 7 <= len(data):
        if BLOCK - pos % BLOCK < 7:
            pos += BLOCK - pos % BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            out.append(chunk)
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            out.append(pending + chunk)
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    records = []
    for raw in out:
        rec = pb.Record()
        rec.ParseFromString(raw)
        records.append(rec)
    return records


def runs_recorded(wandb_dir: Path) -> dict[str, dict]:
    """Per offline run: its name, config and logged artifacts."""
    found = {}
    for f in sorted(wandb_dir.glob("wandb/offline-run-*/run-*.wandb")):
        name, config, artifacts = None, {}, []
        for rec in offline_records(f):
            kind = rec.WhichOneof("record_type")
            if kind == "run":
                name = rec.run.display_name
                config.update({u.key: u.value_json for u in rec.run.config.update})
            elif kind == "config":
                config.update({u.key: u.value_json for u in rec.config.update})
            elif kind == "artifact":
                a = rec.artifact
                refs = [e.ref for e in a.manifest.contents if e.ref]
                paths = [e.path for e in a.manifest.contents]
                artifacts.append({"name": a.name, "type": a.type, "refs": refs, "paths": paths})
        found[name] = {"config": config, "artifacts": artifacts}
    return found


def test_each_stage_logs_its_outputs_and_records_its_inputs(tmp_path):
    pytest.importorskip("wandb")
    nemo, bridge = stand_ins(tmp_path / "upstream")
    root, wdir = tmp_path / "root", tmp_path / "wandb"
    wdir.mkdir()
    env = {
        "MEGATRON_BRIDGE_HOME": str(bridge),
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(wdir),
        "WANDB_SILENT": "true",
        "WANDB_API_KEY": "",
        "NEMO_RL_HOME": "",
    }
    proc = steps_cli(
        "pipeline",
        "run",
        str(REPO / "pipelines" / "tiny_rlvr.yaml"),
        "--root",
        str(root),
        "--nemo-rl",
        str(nemo),
        "--wandb",
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = runs_recorded(wdir)
    assert set(runs) == {"tiny-rlvr/prep", "tiny-rlvr/rlvr", "tiny-rlvr/rlvr__to_hf_checkpoint"}

    prep = runs["tiny-rlvr/prep"]
    (data,) = prep["artifacts"]
    assert (data["name"], data["type"]) == ("DataBlendsArtifact-rl", "dataset")
    assert "manifest.json" in data["paths"]  # small folder: copied into the artifact

    (model,) = runs["tiny-rlvr/rlvr"]["artifacts"]
    assert (model["name"], model["type"]) == ("ModelArtifact-rlvr", "model")
    # a reference to the folder's files, not a copy of them
    ckpt = (root / "rlvr" / "checkpoint").as_uri()
    assert len(model["refs"]) == len(model["paths"]) > 0
    assert all(r.startswith(ckpt + "/") for r in model["refs"])
    assert ckpt + "/step_2/training_info.json" in model["refs"]
    used = json.loads(runs["tiny-rlvr/rlvr"]["config"]["steps_inputs"])
    assert {u["port"]: u["artifact"] for u in used} == {
        "train": "DataBlendsArtifact-rl",
        "validation": "DataBlendsArtifact-rl",
        "policy": "hf_checkpoint-policy",
    }

    conv = runs["tiny-rlvr/rlvr__to_hf_checkpoint"]
    assert [a["name"] for a in conv["artifacts"]] == ["ModelArtifact-megatron_to_hf"]
    used = json.loads(conv["config"]["steps_inputs"])
    assert {u["port"]: u["artifact"] for u in used}["checkpoint"] == "ModelArtifact-rlvr"


def test_a_stage_input_edited_with_its_size_and_mtime_kept_is_a_change(tmp_path):
    """One content identity with the artifact registry (runners.digest), not size + mtime."""
    import os

    from runners.digest import DigestMemo
    from runners.pipeline.lineage import fingerprint

    data = tmp_path / "rows.jsonl"
    data.write_text('{"a": 1}\n')
    before = fingerprint(str(data), memo=DigestMemo(tmp_path / "memo.json"))
    st = data.stat()
    data.write_text('{"a": 2}\n')  # same size
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))  # as `cp -p` / `rsync -a` leave it
    after = fingerprint(str(data), memo=DigestMemo(tmp_path / "memo.json"))
    assert before["digest"] != after["digest"]
    assert fingerprint(str(tmp_path / "absent")) == {"missing": str(tmp_path / "absent")}
