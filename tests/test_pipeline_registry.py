"""Pipeline outputs are seen from the project folder: `lineage NAME` and `--input NAME:latest`.

As the user met it: `pipeline run prep_pipe.yaml` registered its output in a nested registry
(runs/pipelines/<name>/<stage>/_runs/artifacts.json), so `lineage DataBlendsArtifact-rl` and
`--input train=DataBlendsArtifact-rl:latest` from the project folder did not see it."""

from __future__ import annotations

import json

from run_fixtures import REPO, clean_env, steps_cli

PIPE = f"""name: my-prep
inputs:
  blend:
    type: data_blend
    path: {REPO}/steps/data_prep/rl_prep/data/blend_tiny.yaml
stages:
  - id: prep
    step: data_prep/rl_prep
    config: tiny
    inputs:
      blend: inputs.blend
"""


def test_a_pipeline_stage_s_output_is_registered_where_the_pipeline_was_started(
    tmp_path, monkeypatch, capsys
):
    (tmp_path / "prep_pipe.yaml").write_text(PIPE)
    env = clean_env(tmp_path, STEPS_OUTPUT=str(tmp_path / "out"))
    proc = steps_cli(monkeypatch, capsys, "pipeline", "run", "prep_pipe.yaml", cwd=tmp_path,
                     env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "runs" / "artifacts.json").is_file()
    proc = steps_cli(monkeypatch, capsys, "lineage", "DataBlendsArtifact-rl:latest", "--json",
                     cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert "data_prep/rl_prep" in json.dumps(doc)
    # the pipeline root itself: each stage's run and what it produced (issue 40 item 11)
    [root] = [p.parent for p in (tmp_path / "runs").rglob("pipeline.json")]
    proc = steps_cli(monkeypatch, capsys, "lineage", str(root.relative_to(tmp_path)), "--json",
                     cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [stage] = json.loads(proc.stdout)["lineage"]["stages"]
    assert stage["stage"] == "prep" and stage["step"] == "data_prep/rl_prep"
    assert [p["artifact"] for p in stage["produced"]] == ["DataBlendsArtifact-rl:v0"]
    proc = steps_cli(monkeypatch, capsys, "lineage", "runs", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "neither run.json" in proc.stderr


def test_to_runs_a_shipped_pipeline_on_the_cpu_up_to_a_stage_and_only_runs_one(
    tmp_path, monkeypatch, capsys
):
    """tiny_rlvr trains on GPUs; `--to prep` runs its CPU part here, `--only` one stage."""
    env = clean_env(tmp_path, STEPS_OUTPUT=str(tmp_path / "out"))
    pipe = str(REPO / "pipelines" / "tiny_rlvr.yaml")
    root = str(tmp_path / "pipe")
    proc = steps_cli(monkeypatch, capsys, "pipeline", "run", pipe, "--root", root, "--to", "prep",
                     cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "prep: running data_prep/rl_prep" in proc.stdout
    assert "rlvr: not selected (after prep)" in proc.stdout
    proc = steps_cli(monkeypatch, capsys, "pipeline", "run", pipe, "--root", root, "--only",
                     "prep", cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 0 and "prep: cached" in proc.stdout, proc.stdout + proc.stderr
    proc = steps_cli(monkeypatch, capsys, "pipeline", "run", pipe, "--root", root, "--to",
                     "nosuch", cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 2 and "E-PIPELINE-STAGE" in proc.stderr
