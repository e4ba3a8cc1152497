"""compose: the shortest chain of catalog steps (converters included), as a plannable file."""

from __future__ import annotations

import json

import pytest
import yaml
from pipeline_toys import steps_main, toy_catalog

from catalog.compose import pipeline_data, shortest_chain
from catalog.discovery import discover
from catalog.errors import StepsError
from catalog.types import load_catalog_types
from runners.config.values import read_config


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
    chain = shortest_chain(
        entries,
        graph,
        ["toy_blend", "toy_hf"],
        "toy_hf",
        through="toy/train",
        read_config=read_config,
    )
    assert [a.step for a in chain] == ["toy/prep", "toy/train", "toy/to_hf"]


def test_chain_picks_the_subtype_a_later_step_needs(toys):
    _, entries, graph = toys
    chain = shortest_chain(
        entries,
        graph,
        ["toy_blend", "toy_hf"],
        "toy_run",
        through="toy/pref_train",
        read_config=read_config,
    )
    assert [a.step for a in chain] == ["toy/prep", "toy/pref_train"]
    assert chain[0].overrides == ("output_type=toy_pref_rows",)


def test_shortest_chain_is_shortest(toys):
    _, entries, graph = toys
    chain = shortest_chain(
        entries, graph, ["toy_rows", "toy_hf"], "toy_run", read_config=read_config
    )
    assert len(chain) == 1 and chain[0].step in ("toy/train",)


def test_no_chain_is_an_error_with_a_hint(toys):
    _, entries, graph = toys
    with pytest.raises(StepsError) as exc:
        shortest_chain(entries, graph, ["toy_blend"], "toy_hf", read_config=read_config)
    assert exc.value.finding.code == "E-COMPOSE-NO-CHAIN"
    assert "--from" in exc.value.finding.fix


def test_unknown_type_is_named(toys):
    _, entries, graph = toys
    with pytest.raises(StepsError) as exc:
        shortest_chain(entries, graph, ["toy_blnd"], "toy_hf", read_config=read_config)
    assert exc.value.finding.code == "E-TYPE-UNKNOWN" and "toy_blend" in exc.value.finding.fix


def test_composed_pipeline_wires_latest_outputs_first(toys):
    _, entries, graph = toys
    start = ["toy_blend", "toy_hf"]
    chain = shortest_chain(
        entries, graph, start, "toy_hf", through="toy/train", read_config=read_config
    )
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


@pytest.fixture
def cli(tmp_path):
    def call(*argv: str):
        return steps_main(*argv, cwd=tmp_path)

    return call


def test_compose_cli_writes_a_file_that_plan_accepts(toys, tmp_path, cli):
    cat = toys[0]
    out = tmp_path / "composed.yaml"
    proc = cli(
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
    )
    assert proc.returncode == 0, proc.stderr
    assert "toy/prep -> toy/train -> toy/to_hf" in proc.stderr
    data = yaml.safe_load(out.read_text())
    assert data["inputs"]["toy_blend"]["path"] == "???"
    proc = cli("plan", str(out), "--catalog", str(cat))
    assert proc.returncode == 0, proc.stderr
    assert "W-PIPELINE-INPUT-UNSET" in proc.stderr


def test_compose_over_the_shipped_catalog_inserts_the_megatron_converter(cli):
    proc = cli(
        "compose",
        "--from",
        "data_blend,hf_checkpoint",
        "--to",
        "hf_checkpoint",
        "--through",
        "rl/nemo_rl/dpo",
        "--config",
        "tiny",
    )
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(proc.stdout)
    assert [s["step"] for s in data["stages"]] == [
        "data_prep/rl_prep",
        "rl/nemo_rl/dpo",
        "convert/megatron_to_hf",
    ]
    assert data["stages"][0]["overrides"] == ["output_type=preference_jsonl"]


def test_a_parameter_port_needs_no_producer_so_the_converter_can_come_first(toys):
    _, entries, graph = toys
    start = ["toy_gym_rows", "toy_megatron"]
    chain = shortest_chain(
        entries, graph, start, "toy_hf", through="toy/train", read_config=read_config
    )
    assert [a.step for a in chain] == ["toy/to_hf", "toy/train", "toy/to_hf"]
    data = pipeline_data(chain, graph, start, "toy_hf", "c")
    first, train, last = data["stages"]
    assert first["inputs"] == {"checkpoint": "inputs.toy_megatron"}
    assert first["overrides"] == ["ref=???"]
    assert train["inputs"]["policy"] == "to_hf.hf"
    assert last["inputs"] == {"checkpoint": "train.checkpoint", "reference": "to_hf.hf"}
    assert "overrides" not in last


def test_compose_from_a_megatron_sft_checkpoint_through_rlvr_plans_once_filled(cli, tmp_path):
    out = tmp_path / "from_sft.yaml"
    proc = cli(
        "compose",
        "--from",
        "nemo_gym_jsonl,megatron_checkpoint",
        "--to",
        "hf_checkpoint",
        "--through",
        "rl/nemo_rl/rlvr",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(out.read_text())
    assert [s["step"] for s in data["stages"]] == [
        "convert/megatron_to_hf",
        "rl/nemo_rl/rlvr",
        "convert/megatron_to_hf",
    ]
    assert data["stages"][0]["overrides"] == ["hf_model_id=???"]
    proc = cli("plan", str(out))
    assert proc.returncode == 1 and "override hf_model_id=<HF hub id or folder>" in proc.stderr

    data["stages"][0]["overrides"] = ["hf_model_id=Qwen/Qwen3-0.6B"]
    (tmp_path / "rows.jsonl").write_text("")
    (tmp_path / "sft").mkdir()
    data["inputs"]["nemo_gym_jsonl"]["path"] = "rows.jsonl"
    data["inputs"]["megatron_checkpoint"]["path"] = "sft"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    proc = cli("plan", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    first, rlvr, last = plan["stages"]
    assert rlvr["inputs"]["policy"]["source"] == f"{first['id']}.hf"
    assert last["inputs"]["reference"]["source"] == f"{first['id']}.hf"
