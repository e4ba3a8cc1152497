"""`steps run` with W&B configured logs its inputs and outputs, offline too: read back from the
offline run's `.wandb` file and checked against the registry's digests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_fixtures import REPO, clean_env, steps_run
from test_pipeline_lineage import offline_records

from runners.artifacts.registry import Output, Provenance, register
from runners.artifacts.wandb_log import settings_for
from runners.digest import DigestMemo

# Each logged run starts W&B's service: a child, since wandb.init keeps the service and its hooks
# for the life of the process that called it.
pytestmark = pytest.mark.slow


def _offline_run(run_dir: Path) -> tuple[dict, list[dict]]:
    """The config and the logged artifacts (with their metadata) of the run's offline W&B run."""
    [f] = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    config, artifacts = {}, []
    for rec in offline_records(f):
        kind = rec.WhichOneof("record_type")
        if kind in ("run", "config"):
            updates = rec.run.config.update if kind == "run" else rec.config.update
            config.update({u.key: json.loads(u.value_json) for u in updates})
        elif kind == "artifact":
            a = rec.artifact
            artifacts.append(
                {
                    "name": a.name,
                    "type": a.type,
                    "aliases": list(a.aliases),
                    "metadata": json.loads(a.metadata or "{}"),
                    "paths": [e.path for e in a.manifest.contents],
                }
            )
    return config, artifacts


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return clean_env(
        tmp_path,
        STEPS_OUTPUT=str(tmp_path / "out"),
        STEPS_RUNS_DIR=str(tmp_path / "runs"),
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_API_KEY="",
        **extra,
    )


def test_env_toml_wandb_table_logs_a_runs_outputs_and_inputs_offline(tmp_path):
    pytest.importorskip("wandb")
    (tmp_path / "env.toml").write_text('[wandb]\nproject = "nano3"\nentity = "team"\n')
    proc = steps_run("data_prep/rl_prep", "-c", "tiny", cwd=tmp_path, env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["artifacts"]
    [registered] = report["registered"]
    wb = report["wandb"]
    assert (wb["project"], wb["entity"], wb["mode"]) == ("nano3", "team", "offline")
    assert wb["settings_from"] == f"[wandb] in {tmp_path / 'env.toml'}"
    assert wb["sync"].startswith("wandb sync ") and Path(wb["sync"].split()[-1]).is_dir()
    assert [o["artifact"] for o in wb["logged"]] == ["DataBlendsArtifact-rl:v0"]

    run_dir = next((tmp_path / "runs" / "data_prep" / "rl_prep").iterdir())
    config, [art] = _offline_run(run_dir)
    assert (art["name"], art["type"]) == ("DataBlendsArtifact-rl", "dataset")
    assert set(art["aliases"]) >= {"latest", "v0"}
    assert art["metadata"]["steps_digest"] == registered["digest"]
    assert art["metadata"]["steps_path"] == registered["path"]
    assert "manifest.json" in art["paths"]  # a small folder is copied, not referenced
    [used] = config["steps_inputs"]  # offline W&B refuses use_artifact: the inputs are here
    assert (used["port"], used["artifact"]) == ("blend", "data_blend-blend")
    assert used["digest"].startswith("xxh3_128:")
    assert config["step"] == "data_prep/rl_prep"
    assert config["config_digest"].startswith("sha256:")


def test_an_input_given_by_name_is_logged_under_that_name_and_digest(tmp_path):
    pytest.importorskip("wandb")
    blend = REPO / "steps" / "data_prep" / "rl_prep" / "data" / "blend_tiny.yaml"
    made = Provenance(step="hand", run_dir=None)
    memo = DigestMemo(tmp_path / "memo.json")
    [known] = register(tmp_path / "runs", [Output("BlendArtifact-tiny", "data_blend", str(blend),
                                                  "blend")], made, memo)  # fmt: skip
    (tmp_path / "env.toml").write_text('[wandb]\nproject = "nano3"\n')
    proc = steps_run("data_prep/rl_prep", "-c", "tiny", "--input", "blend=BlendArtifact-tiny",
                     cwd=tmp_path, env=_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    wb = json.loads(proc.stdout)["artifacts"]["wandb"]
    assert wb["entity"] is None
    run_dir = next((tmp_path / "runs" / "data_prep" / "rl_prep").iterdir())
    config, _ = _offline_run(run_dir)
    [used] = config["steps_inputs"]
    assert (used["artifact"], used["digest"]) == ("BlendArtifact-tiny:v0", known.version.digest)


def test_without_wandb_settings_nothing_is_logged(tmp_path, steps_in_process):
    proc = steps_in_process(
        "run", "data_prep/rl_prep", "-c", "tiny", cwd=tmp_path, env=_env(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["artifacts"]
    assert "wandb" not in report and len(report["registered"]) == 1
    assert not list((tmp_path / "runs").rglob("offline-run-*"))


def test_the_configs_logger_wins_over_env_toml():
    logger = {"logger": {"wandb_enabled": True, "wandb": {"project": "p", "entity": "e"}}}
    s = settings_for(logger, {"project": "other"}, "env.toml")
    assert (s.project, s.entity, s.source) == ("p", "e", "logger.wandb")
    off = {"logger": {"wandb_enabled": False, "wandb": {"project": "p"}}}
    assert settings_for(off, {"project": "other"}, None).project == "other"
    assert settings_for(off, None, None) is None
