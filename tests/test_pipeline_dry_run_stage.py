"""A pipeline that runs on a CPU end to end (issue 40 item 14): rl_prep, its output checked by
its contract, then GRPO as a dry-run stage (`dry_run: true`); and `--to`/`--only`, which the
pipeline's dry run honours as its real run does."""

from __future__ import annotations

import json
import re

from pipeline_toys import REPO, steps_cli, steps_main, toy_catalog
from test_pipeline_plan import PREP_TRAIN, only_error, plan_of

CPU = REPO / "pipelines" / "tiny_rlvr_check.yaml"
RLVR = REPO / "pipelines" / "tiny_rlvr.yaml"
NO_NEMO_RL = {"NEMO_RL_HOME": "", "MEGATRON_BRIDGE_HOME": "", "STEPS_RUNS_DIR": ""}


def test_the_shipped_cpu_pipeline_prepares_checks_and_dry_runs_grpo_from_a_fresh_folder(tmp_path):
    run = steps_cli("pipeline", "run", str(CPU), cwd=tmp_path, env=NO_NEMO_RL)
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"prep: completed in [\d.]+s \(data passes nemo_gym_jsonl\)", run.stdout)
    assert re.search(r"rlvr: checked in [\d.]+s \(dry run: preflight clean, nothing", run.stdout)
    root = tmp_path / "runs" / "pipelines" / "tiny-rlvr-check"
    assert "  | {...} (the run's summary, " in run.stdout  # folded, whole in the stage log
    assert (
        '"output_dir"' not in run.stdout and '"output_dir"' in (root / "prep/stage.log").read_text()
    )
    record = json.loads((root / "rlvr" / "record.json").read_text())
    assert (record["status"], record["dry_run"], record["outputs"]) == ("completed", True, {})
    assert "--dry-run" in record["command"]
    assert not (root / "rlvr" / "checkpoint").exists()  # nothing launched, nothing written
    assert list((root / "prep" / "data").rglob("*.jsonl"))
    registry = json.loads((tmp_path / "runs" / "artifacts.json").read_text())
    assert "DataBlendsArtifact-rl" in json.dumps(registry)

    again = steps_cli("pipeline", "run", str(CPU), cwd=tmp_path, env=NO_NEMO_RL)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "prep: cached" in again.stdout  # the data is cached; the check runs every time
    assert "rlvr: checked" in again.stdout


def test_the_pipeline_dry_run_checks_only_what_to_selects(tmp_path):
    res = steps_main("pipeline", "run", str(RLVR), "--dry-run", "--to", "prep", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1. prep (data_prep/rl_prep)\n   preflight clean" in res.stdout
    assert "2. rlvr (rl/nemo_rl/rlvr): not selected" in res.stdout
    assert (
        "3. rlvr__to_hf_checkpoint (convert/megatron_to_hf) [inserted]: not selected" in res.stdout
    )
    assert "W-NEMO-RL-NOT-FOUND" not in res.stdout  # rlvr was not checked
    assert "dry run: clean (1 of 3 stages)" in res.stdout


def test_the_pipeline_dry_run_checks_the_only_stage_alone_on_planned_inputs(tmp_path):
    res = steps_main("pipeline", "run", str(CPU), "--dry-run", "--only", "rlvr", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1. prep (data_prep/rl_prep): not selected" in res.stdout
    assert "2. rlvr (rl/nemo_rl/rlvr) [dry run]\n" in res.stdout
    assert "input train <- prep.data: not produced yet, planned nemo_gym_jsonl" in res.stdout
    assert "dry run: clean (1 of 2 stages)" in res.stdout
    bad = steps_main("pipeline", "run", str(CPU), "--dry-run", "--only", "rlvx", cwd=tmp_path)
    assert bad.returncode == 2 and "E-PIPELINE-STAGE" in bad.stderr and "rlvr" in bad.stderr


def test_nothing_may_read_the_output_of_a_dry_run_stage(tmp_path):
    cat = toy_catalog(tmp_path / "cat")
    text = PREP_TRAIN.replace("    step: toy/prep\n", "    step: toy/prep\n    dry_run: true\n")
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-REF")
    assert "stage 'prep' is a dry run" in f.message and "prep.data" in f.message
    assert f.line is not None and "dry_run: true" in f.fix

    text = PREP_TRAIN.replace("    step: toy/train\n", "    step: toy/train\n    dry_run: true\n")
    plan = plan_of(tmp_path, cat, text + "targets: [train.checkpoint]\n")
    f = only_error(plan, "E-PIPELINE-REF")
    assert f.message.startswith("target 'train.checkpoint': stage 'train' is a dry run")


def test_a_dry_run_stage_is_refused_on_a_cluster_before_anything_is_queued(tmp_path):
    res = steps_main("pipeline", "run", str(CPU), "--batch", "my-cluster", cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "E-CLI-OPTION stage 'rlvr' is a dry run" in res.stderr
    assert not (tmp_path / "runs").exists()


def test_a_dry_run_stage_is_shown_in_the_plan_without_outputs(tmp_path):
    res = steps_main("plan", str(CPU), cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2. rlvr  rl/nemo_rl/rlvr@" in res.stdout and "[dry run]" in res.stdout
    assert "out checkpoint" not in res.stdout and "W-PIPELINE-UNUSED" not in res.stdout + res.stderr
