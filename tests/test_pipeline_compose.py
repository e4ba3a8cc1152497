"""compose: the shortest chain of catalog steps (converters included), as a plannable file."""

from __future__ import annotations

import pytest
import yaml
from pipeline_toys import steps_cli, toy_catalog

from catalog.compose import pipeline_data, shortest_chain
from catalog.discovery import discover
from catalog.errors import StepsError
from catalog.types import load_catalog_types


@pytest.fixture
def toys(tmp_path):
    cat = toy_catalog(tmp_path / "cat")
    return (
        cat,
        discover([cat], include_builtin=False),
        load_catalog_types([cat], include_builtin=False),
    )


def test_chain_reaches_a_type_through_a_converter(toys):
    _, entries, graph = toys
    chain = shortest_chain(entries, graph, ["toy_blend", "toy_hf"], "toy_hf", through="toy/train")
    assert [a.step for a in chain] == ["toy/prep", "toy/train", "toy/to_hf"]


def test_chain_picks_the_subtype_a_later_step_needs(toys):
    _, entries, graph = toys
    chain = shortest_chain(
        entries, graph, ["toy_blend", "toy_hf"], "toy_run", through="toy/pref_train"
    )
    assert [a.step for a in chain] == ["toy/prep", "toy/pref_train"]
    assert chain[0].overrides == ("output_type=toy_pref_rows",)


def test_shortest_chain_is_shortest(toys):
    _, entries, graph = toys
    chain = shortest_chain(entries, graph, ["toy_rows", "toy_hf"], "toy_run")
    assert len(chain) == 1 and chain[0].step in ("toy/train",)


def test_no_chain_is_an_error_with_a_hint(toys):
    _, entries, graph = toys
    with pytest.raises(StepsError) as exc:
        shortest_chain(entries, graph, ["toy_blend"], "toy_hf")
    assert exc.value.finding.code == "E-COMPOSE-NO-CHAIN"
    assert "--from" in exc.value.finding.fix


def test_unknown_type_is_named(toys):
    _, entries, graph = toys
    with pytest.raises(StepsError) as exc:
        shortest_chain(entries, graph, ["toy_blnd"], "toy_hf")
    assert exc.value.finding.code == "E-TYPE-UNKNOWN" and "toy_blend" in exc.value.finding.fix


def test_composed_pipeline_wires_latest_outputs_first(toys):
    _, entries, graph = toys
    start = ["toy_blend", "toy_hf"]
    chain = shortest_chain(entries, graph, start, "toy_hf", through="toy/train")
    data = pipeline_data(chain, graph, start, "toy_hf", "c")
    stages = {s["id"]: s for s in data["stages"]}
    assert stages["train"]["inputs"] == {
        "train": "prep.data",
        "validation": "prep.data",
        "policy": "inputs.toy_hf",
    }
    assert stages["to_hf"]["inputs"] == {
        "checkpoint": "train.checkpoint",
        "reference": "inputs.toy_hf",
    }
    assert data["targets"] == ["to_hf.hf"]


def test_compose_cli_writes_a_file_that_plan_accepts(toys, tmp_path):
    cat = toys[0]
    out = tmp_path / "composed.yaml"
    proc = steps_cli(
        "compose",
        "--from",
        "toy_blend,toy_hf",
        "--to",
        "toy_hf",
        "--through",
        "toy/train",
        "-o",
        str(out),
        "--catalog",
        str(cat),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "toy/prep -> toy/train -> toy/to_hf" in proc.stderr
    data = yaml.safe_load(out.read_text())
    assert data["inputs"]["toy_blend"]["path"] == "???"
    proc = steps_cli("plan", str(out), "--catalog", str(cat), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "W-PIPELINE-INPUT-UNSET" in proc.stderr


def test_compose_over_the_shipped_catalog_inserts_the_megatron_converter(tmp_path):
    proc = steps_cli(
        "compose",
        "--from",
        "data_blend,hf_checkpoint",
        "--to",
        "hf_checkpoint",
        "--through",
        "rl/nemo_rl/dpo",
        "--config",
        "tiny",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(proc.stdout)
    assert [s["step"] for s in data["stages"]] == [
        "data_prep/rl_prep",
        "rl/nemo_rl/dpo",
        "convert/megatron_to_hf",
    ]
    assert data["stages"][0]["overrides"] == ["output_type=preference_jsonl"]
