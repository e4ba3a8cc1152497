"""The planner: wiring, type checks through is_a, converter insertion, and each finding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_toys import REPO, steps_main, toy_catalog, write_pipeline

from catalog.discovery import discover
from catalog.errors import StepsError
from catalog.pipeline import SCHEMA_PATH, json_schema_text, load_pipeline
from catalog.planner import plan_pipeline
from catalog.types import load_catalog_types
from runners.config.values import read_config

HEAD = """\
name: toy
inputs:
  blend: {type: toy_blend, path: blend.yaml}
  base: {type: toy_hf, path: base_model}
"""


@pytest.fixture
def cat(tmp_path: Path) -> Path:
    return toy_catalog(tmp_path / "cat")


def plan_of(tmp_path: Path, cat: Path, text: str):
    pf = load_pipeline(write_pipeline(tmp_path / "p" / "pipe.yaml", text))
    (tmp_path / "p" / "blend.yaml").write_text("datasets: []\n")
    (tmp_path / "p" / "base_model").mkdir(exist_ok=True)
    entries = discover([cat], include_builtin=False)
    graph = load_catalog_types([cat], include_builtin=False)
    return plan_pipeline(pf, entries, graph, tmp_path / "root", read_config)


def codes(plan) -> list[str]:
    return [f.code for f in plan.findings]


def only_error(plan, code: str):
    errors = [f for f in plan.findings if f.is_error]
    assert [f.code for f in errors] == [code], [f.render() for f in plan.findings]
    return errors[0]


def line_of(path: Path, needle: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if needle in t)


PREP_TRAIN = (
    HEAD
    + """\
stages:
  - id: prep
    step: toy/prep
    inputs: {blend: inputs.blend}
  - id: train
    step: toy/train
    inputs:
      train: prep.data
      policy: inputs.base
"""
)


def test_valid_pipeline_orders_stages_and_types_every_edge(tmp_path, cat):
    plan = plan_of(tmp_path, cat, PREP_TRAIN + "targets: [train.checkpoint]\n")
    assert plan.ok and not plan.findings, [f.render() for f in plan.findings]
    assert [s.id for s in plan.stages] == ["prep", "train"]
    edges = {(e.source, e.target): (e.type, e.accepts) for e in plan.edges}
    assert edges == {
        ("inputs.blend", "prep.blend"): ("toy_blend", "toy_blend"),
        ("prep.data", "train.train"): ("toy_gym_rows", "toy_rows"),
        ("inputs.base", "train.policy"): ("toy_hf", "toy_hf"),
    }


def test_outputs_live_under_the_root_and_are_bound_to_consumers(tmp_path, cat):
    plan = plan_of(tmp_path, cat, PREP_TRAIN + "targets: [train.checkpoint]\n")
    root = tmp_path / "root"
    prep, train = plan.stage("prep"), plan.stage("train")
    assert prep.outputs["data"].value == str(root / "prep" / "data")
    assert train.inputs["train"].value == str(root / "prep" / "data")
    assert train.outputs["checkpoint"].value == str(root / "train" / "checkpoint")
    assert prep.inputs["blend"].value == str(tmp_path / "p" / "blend.yaml")
    assert train.inputs["policy"].value == str(tmp_path / "p" / "base_model")
    assert train.after == ["prep"]


def test_type_key_narrows_the_produced_type(tmp_path, cat):
    text = PREP_TRAIN.replace(
        "step: toy/prep\n", "step: toy/prep\n    overrides: [output_type=toy_pref_rows]\n"
    )
    plan = plan_of(tmp_path, cat, text + "targets: [train.checkpoint]\n")
    assert plan.ok
    assert plan.stage("prep").outputs["data"].type == "toy_pref_rows"


def test_type_mismatch_names_both_types_and_the_edge(tmp_path, cat):
    text = PREP_TRAIN.replace("step: toy/train", "step: toy/pref_train")
    plan = plan_of(tmp_path, cat, text)
    f = only_error(plan, "E-PIPELINE-TYPE")
    assert "prep.data (toy_gym_rows) -> train.train (toy_pref_rows)" in f.message
    assert f.path == str(tmp_path / "p" / "pipe.yaml")
    assert f.line == line_of(tmp_path / "p" / "pipe.yaml", "train: prep.data")
    assert "output_type=toy_pref_rows" in f.fix


def test_unrelated_types_are_a_type_error(tmp_path, cat):
    text = PREP_TRAIN.replace("policy: inputs.base", "policy: prep.data")
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-TYPE")
    assert "(toy_gym_rows) -> train.policy (toy_hf)" in f.message


def test_converter_is_inserted_where_only_convert_to_reaches_the_consumer(tmp_path, cat):
    text = (
        PREP_TRAIN
        + """\
  - id: eval
    step: toy/eval
    inputs: {model: train.checkpoint}
targets: [eval.scores]
"""
    )
    plan = plan_of(tmp_path, cat, text)
    assert plan.ok, [f.render() for f in plan.findings]
    assert [s.id for s in plan.stages] == ["prep", "train", "train__to_toy_hf", "eval"]
    conv = plan.stage("train__to_toy_hf")
    assert conv.inserted and conv.step == "toy/to_hf"
    assert conv.inputs["checkpoint"].source == "train.checkpoint"
    assert conv.inputs["checkpoint"].type == "toy_run"
    # the reference model is the policy the producer trained from
    assert conv.inputs["reference"].source == "inputs.base"
    assert plan.stage("eval").inputs["model"].source == "train__to_toy_hf.hf"
    assert plan.stage("eval").inputs["model"].value == str(
        tmp_path / "root" / "train__to_toy_hf" / "hf"
    )
    assert not plan.stage("eval").inserted


def test_two_consumers_share_one_inserted_converter(tmp_path, cat):
    text = (
        PREP_TRAIN
        + """\
  - id: eval_a
    step: toy/eval
    inputs: {model: train.checkpoint}
  - id: eval_b
    step: toy/eval
    inputs: {model: train.checkpoint}
targets: [eval_a.scores, eval_b.scores]
"""
    )
    plan = plan_of(tmp_path, cat, text)
    assert plan.ok
    assert [s.id for s in plan.stages if s.inserted] == ["train__to_toy_hf"]


def test_typed_target_inserts_the_converter(tmp_path, cat):
    text = PREP_TRAIN + "targets:\n  - {output: train.checkpoint, type: toy_hf}\n"
    plan = plan_of(tmp_path, cat, text)
    assert plan.ok
    assert list(plan.targets) == ["train__to_toy_hf.hf"]
    assert plan.targets["train__to_toy_hf.hf"].type == "toy_hf"


def test_converter_reference_falls_back_to_the_producers_config_value(tmp_path, cat):
    text = PREP_TRAIN.replace("      policy: inputs.base\n", "")
    plan = plan_of(tmp_path, cat, text + "targets:\n  - {output: train.checkpoint, type: toy_hf}\n")
    assert plan.ok, [f.render() for f in plan.findings]
    ref = plan.stage("train__to_toy_hf").inputs["reference"]
    assert (ref.source, ref.value, ref.hub) == ("config", "org/model", True)


SFT_TRAIN = """\
name: toy
inputs:
  rows: {type: toy_gym_rows, path: rows.jsonl}
  sft: {type: toy_megatron, path: sft_ckpt}
stages:
  - id: train
    step: toy/train
    inputs: {train: inputs.rows, policy: inputs.sft}
targets:
  - {output: train.checkpoint, type: toy_hf}
"""


def test_converter_is_inserted_before_a_step_fed_a_megatron_checkpoint(tmp_path, cat):
    text = SFT_TRAIN + "converters:\n  toy/to_hf: {overrides: [ref=org/base]}\n"
    plan = plan_of(tmp_path, cat, text)
    assert plan.ok, [f.render() for f in plan.findings]
    assert [s.id for s in plan.stages] == ["sft__to_toy_hf", "train", "train__to_toy_hf"]
    before = plan.stage("sft__to_toy_hf")
    assert before.inserted and before.inputs["checkpoint"].source == "inputs.sft"
    assert before.overrides == ["ref=org/base"] and "reference" not in before.inputs
    assert plan.stage("train").inputs["policy"].source == "sft__to_toy_hf.hf"


def test_inserted_converter_without_a_reference_asks_for_the_parameter(tmp_path, cat):
    f = only_error(plan_of(tmp_path, cat, SFT_TRAIN), "E-PIPELINE-INPUT-MISSING")
    assert "inserted stage 'sft__to_toy_hf'" in f.message and "'reference'" in f.message
    assert "converters: {toy/to_hf: {overrides: [ref=<HF hub id or folder>]}}" in f.fix
    assert f.line == line_of(tmp_path / "p" / "pipe.yaml", "inputs: {train:")


def test_a_parameter_port_left_unset_names_the_override(tmp_path, cat):
    text = SFT_TRAIN.replace("policy: inputs.sft}", "policy: conv.hf}").replace(
        "stages:\n",
        "stages:\n  - id: conv\n    step: toy/to_hf\n    inputs: {checkpoint: inputs.sft}\n",
    )
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-INPUT-MISSING")
    assert "stage 'conv' (toy/to_hf): required input 'reference'" in f.message
    assert f.fix == "give the stage the override ref=<HF hub id or folder>"
    fixed = text.replace("step: toy/to_hf\n", "step: toy/to_hf\n    overrides: [ref=org/base]\n")
    assert plan_of(tmp_path, cat, fixed).ok


def test_a_bad_stage_override_is_reported_as_run_would_report_it(tmp_path, cat):
    text = PREP_TRAIN.replace(
        "step: toy/train\n", "step: toy/train\n    overrides: [polcy.model=x]\n"
    )
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-CONFIG")
    assert "polcy.model" in f.message and "did you mean policy.model" in f.fix
    assert f.line == line_of(tmp_path / "p" / "pipe.yaml", "overrides: [polcy")


def test_missing_required_input_is_reported_with_a_candidate(tmp_path, cat):
    text = PREP_TRAIN.replace("      train: prep.data\n", "")
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-INPUT-MISSING")
    assert "required input 'train' (toy_rows)" in f.message and "data.train" in f.message
    assert "train: prep.data" in f.fix
    assert f.line == line_of(tmp_path / "p" / "pipe.yaml", "id: train") + 2


def test_required_input_set_by_the_config_is_not_missing(tmp_path, cat):
    text = PREP_TRAIN.replace("      policy: inputs.base\n", "")
    plan = plan_of(tmp_path, cat, text + "targets: [train.checkpoint]\n")
    assert plan.ok
    assert "policy" not in plan.stage("train").inputs


def test_cycle_is_reported_with_its_stages(tmp_path, cat):
    text = (
        HEAD
        + """\
stages:
  - id: a
    step: toy/split
    inputs: {data: b.left}
  - id: b
    step: toy/split
    inputs: {data: a.left}
"""
    )
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-CYCLE")
    assert "a -> b -> a" in f.message


def test_unknown_step_suggests_the_close_one(tmp_path, cat):
    text = PREP_TRAIN.replace("step: toy/train", "step: toy/trian")
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-STEP")
    assert "toy/trian" in f.message and "toy/train" in f.fix
    assert f.line == line_of(tmp_path / "p" / "pipe.yaml", "toy/trian")


def test_duplicate_stage_id(tmp_path, cat):
    text = PREP_TRAIN.replace("id: train", "id: prep")
    plan = plan_of(tmp_path, cat, text)
    assert "E-PIPELINE-DUPLICATE-ID" in codes(plan)
    f = next(f for f in plan.findings if f.code == "E-PIPELINE-DUPLICATE-ID")
    lines = (tmp_path / "p" / "pipe.yaml").read_text().splitlines()
    assert f.line == [i for i, t in enumerate(lines, 1) if "id: prep" in t][1]


def test_bare_stage_reference_with_two_fitting_outputs_is_ambiguous(tmp_path, cat):
    text = (
        HEAD
        + """\
stages:
  - id: prep
    step: toy/prep
    inputs: {blend: inputs.blend}
  - id: split
    step: toy/split
    inputs: {data: prep}
  - id: train
    step: toy/train
    inputs: {train: split, policy: inputs.base}
"""
    )
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-AMBIGUOUS")
    assert "split.left" in f.message and "split.right" in f.message


def test_bare_stage_reference_with_one_output_resolves(tmp_path, cat):
    text = PREP_TRAIN.replace("train: prep.data", "train: prep")
    plan = plan_of(tmp_path, cat, text + "targets: [train.checkpoint]\n")
    assert plan.ok and plan.stage("train").inputs["train"].source == "prep.data"


def test_input_both_wired_and_overridden_is_ambiguous(tmp_path, cat):
    text = PREP_TRAIN.replace(
        "step: toy/train\n", "step: toy/train\n    overrides: [data.train=/x.jsonl]\n"
    )
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-AMBIGUOUS")
    assert "data.train=/x.jsonl" in f.message


def test_unused_outputs_are_a_warning(tmp_path, cat):
    plan = plan_of(tmp_path, cat, PREP_TRAIN)
    assert plan.ok
    f = next(f for f in plan.findings if f.code == "W-PIPELINE-UNUSED")
    assert not f.is_error and "train.checkpoint" in f.message


def test_unknown_reference_and_port_suggest_names(tmp_path, cat):
    text = PREP_TRAIN.replace("train: prep.data", "train: perp.data")
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-REF")
    assert "no stage 'perp'" in f.message and "prep" in f.fix
    text = PREP_TRAIN.replace("train: prep.data", "trian: prep.data")
    plan = plan_of(tmp_path, cat, text)
    assert "E-PIPELINE-PORT" in codes(plan)


def test_unknown_input_type(tmp_path, cat):
    text = PREP_TRAIN.replace("type: toy_blend", "type: toy_blnd")
    f = only_error(plan_of(tmp_path, cat, text), "E-PIPELINE-TYPE-UNKNOWN")
    assert "toy_blend" in f.fix


def test_schema_error_points_at_the_line(tmp_path):
    path = write_pipeline(
        tmp_path / "bad.yaml", "name: x\nstages:\n  - id: a\n    stpe: toy/prep\n"
    )
    with pytest.raises(StepsError) as exc:
        load_pipeline(path)
    f = exc.value.finding
    assert f.code == "E-PIPELINE-SCHEMA" and f.line == 4 and "stpe" in f.message


def test_published_schema_matches_the_model():
    assert SCHEMA_PATH.read_text(encoding="utf-8") == json_schema_text()


def test_plan_cli_exits_1_with_located_findings_and_no_traceback(tmp_path, cat):
    text = PREP_TRAIN.replace("step: toy/train", "step: toy/pref_train")
    path = write_pipeline(tmp_path / "p" / "pipe.yaml", text)
    proc = steps_main("plan", str(path), "--catalog", str(cat), cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert f"{path}:{line_of(path, 'train: prep.data')}: E-PIPELINE-TYPE" in proc.stderr


def test_plan_cli_json_and_mermaid(tmp_path, cat):
    path = write_pipeline(
        tmp_path / "p" / "pipe.yaml",
        PREP_TRAIN + "targets:\n  - {output: train.checkpoint, type: toy_hf}\n",
    )
    proc = steps_main("plan", str(path), "--catalog", str(cat), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [s["id"] for s in data["stages"]] == ["prep", "train", "train__to_toy_hf"]
    assert data["stages"][2]["inserted"] is True
    assert data["root"] == str(tmp_path / "runs" / "pipelines" / "toy")
    proc = steps_main("plan", str(path), "--catalog", str(cat), "--format", "mermaid", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("flowchart LR")
    assert 'prep -- "train: toy_gym_rows" --> train' in proc.stdout
    assert 'train__to_toy_hf{{"' in proc.stdout


@pytest.mark.parametrize("name", ["tiny_rlvr.yaml", "tiny_dpo.yaml"])
def test_shipped_examples_plan_with_the_converter_inserted(tmp_path, name):
    proc = steps_main("plan", str(REPO / "pipelines" / name), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    inserted = [s for s in data["stages"] if s["inserted"]]
    assert [s["step"] for s in inserted] == ["convert/megatron_to_hf"]
    assert [t["type"] for t in data["targets"].values()] == ["hf_checkpoint"]
    assert not [f for f in data["findings"] if f.get("severity") == "error"]
