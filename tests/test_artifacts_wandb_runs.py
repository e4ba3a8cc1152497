"""W&B for every `steps run`, offline: a training run's checkpoint is logged once it is ready (by
reference, with its digest), a converter logs its output and names its input; each run prints a
line per artifact and what `wandb sync` would upload. Read back from the offline runs' `.wandb`
files and checked against the registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_fixtures import only_run_dir, steps_child, steps_run
from test_artifacts_pending import _lineage, _setup, _train
from test_pipeline_lineage import offline_records

from runners.artifacts.names import parse_ref
from runners.artifacts.registry import load, lookup

pytestmark = pytest.mark.slow  # each logged run starts W&B's service


def _logged(run_dir: Path) -> tuple[dict, list[dict]]:
    """(config, artifacts) of the one offline W&B run under `run_dir`: each artifact's name,
    type, aliases, metadata and manifest entries (path, reference URI)."""
    [f] = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    config, artifacts = {}, []
    for rec in offline_records(f):
        kind = rec.WhichOneof("record_type")
        if kind in ("run", "config"):
            updates = rec.run.config.update if kind == "run" else rec.config.update
            config.update({u.key: json.loads(u.value_json) for u in updates})
        elif kind == "artifact":
            a = rec.artifact
            artifacts.append({
                "name": a.name, "type": a.type, "aliases": set(a.aliases),
                "metadata": json.loads(a.metadata or "{}"),
                "entries": [(e.path, e.ref) for e in a.manifest.contents],
            })  # fmt: skip
    return config, artifacts


def test_training_and_converter_runs_log_their_artifacts_offline_with_their_digests(tmp_path):
    pytest.importorskip("wandb")
    catalog, work, env = _setup(tmp_path, WANDB_MODE="offline", WANDB_SILENT="true",
                                WANDB_API_KEY="")  # fmt: skip
    (work / "env.toml").write_text('[wandb]\nproject = "nano3"\nentity = "team"\n')
    trained = _train(tmp_path, catalog, work, env)
    assert trained.returncode == 0, trained.stderr
    assert "wandb team/nano3: logs them and their inputs when they are ready" in trained.stderr

    # children: settling logs to W&B, whose wandb.init holds a service process for its caller
    model = _lineage(steps_child, "ModelArtifact-fake_dpo", work, env)  # settles: logged, once
    assert model["state"] == "ready"
    assert model["wandb"]["logged"] is True and model["wandb"]["mode"] == "offline"
    assert model["wandb"]["sync"].startswith("wandb sync ")
    config, [art] = _logged(only_run_dir(tmp_path / "runs", "rl/fake_dpo"))
    assert (art["name"], art["type"]) == ("ModelArtifact-fake_dpo", "model")
    assert art["aliases"] >= {"latest", "v0"}
    assert art["metadata"]["steps_digest"] == model["digest"]
    assert art["metadata"]["steps_path"] == model["path"]
    folder = Path(model["path"])  # a checkpoint is referenced file by file, never copied
    assert sorted(art["entries"]) == sorted(
        (p.relative_to(folder).as_posix(), p.as_uri()) for p in folder.rglob("*") if p.is_file()
    )
    inputs = {u["port"]: u for u in config["steps_inputs"]}
    assert set(inputs) == {"train", "validation", "policy"}
    assert inputs["train"]["digest"].startswith("xxh3_128:")
    assert inputs["policy"]["digest"] is None  # a hub id: named, never hashed
    again = _lineage(steps_child, "ModelArtifact-fake_dpo", work, env)
    assert again["wandb"] == model["wandb"]  # not twice

    out = tmp_path / "hf"
    conv = steps_run("convert/dcp_to_hf", "-c", "tiny", f"hf_path={out}", "--input",
                     "checkpoint=ModelArtifact-fake_dpo:latest", cwd=work, env=env)  # fmt: skip
    assert conv.returncode == 0, conv.stdout + conv.stderr
    lines = conv.stderr.splitlines()
    assert (
        "wandb team/nano3 (offline): log_artifact ModelArtifact-dcp_to_hf:v0 (by reference)"
        in lines
    )
    assert any(ln.startswith("wandb team/nano3 (offline): input ModelArtifact-fake_dpo:v0 (port "
                             "checkpoint)") for ln in lines)  # fmt: skip
    assert any("nothing uploaded; `wandb sync " in ln for ln in lines)
    config, [hf] = _logged(only_run_dir(tmp_path / "runs", "convert/dcp_to_hf"))
    root = tmp_path / "runs"
    v = lookup(load(root), parse_ref("ModelArtifact-dcp_to_hf"), root)
    assert (hf["name"], hf["metadata"]["steps_digest"]) == ("ModelArtifact-dcp_to_hf", v.digest)
    [used] = config["steps_inputs"]
    assert (used["artifact"], used["digest"]) == ("ModelArtifact-fake_dpo:v0", model["digest"])
