"""compose: the shortest chain of catalog steps (converters included), as a plannable file."""

from __future__ import annotations

import json

import pytest
import yaml
from pipeline_toys import REPO, steps_main, toy_catalog

from catalog.compose import best_chains, pipeline_data, to_fill
from catalog.discovery import discover
from catalog.errors import StepsError
from catalog.types import load_catalog_types
from runners.config.values import read_config
from steps.cli import main


def shortest_chain(*args, **kw):
    """The best chain's steps."""
    return list(best_chains(*args, **kw)[0].actions)


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


def test_a_required_input_no_starting_type_gives_is_added_to_the_pipeline(toys):
    _, entries, graph = toys
    chain = shortest_chain(entries, graph, ["toy_blend"], "toy_hf", read_config=read_config)
    assert [a.step for a in chain] == ["toy/prep", "toy/train", "toy/to_hf"]
    data = pipeline_data(chain, graph, ["toy_blend"], "toy_hf", "c")
    assert data["inputs"] == {
        "blend": {"type": "toy_blend", "path": "???"},
        "policy": {"type": "toy_hf", "path": "???", "description": "x"},
    }
    assert data["stages"][2]["inputs"]["reference"] == "inputs.policy"  # the base model
    assert to_fill(data) == ["inputs.blend.path (toy_blend)", "inputs.policy.path (toy_hf: x)"]


def test_a_starting_type_no_chain_reads_is_named(toys):
    _, entries, graph = toys
    with pytest.raises(StepsError) as exc:
        shortest_chain(
            entries, graph, ["toy_blend", "toy_scores"], "toy_hf", read_config=read_config
        )
    assert exc.value.finding.code == "E-COMPOSE-NO-CHAIN"
    assert exc.value.finding.message.startswith("no catalog step reads toy_scores,")
    assert "drop toy_scores from --from" in exc.value.finding.fix


def test_a_goal_nothing_makes_is_an_error_with_a_hint(toys):
    _, entries, graph = toys
    with pytest.raises(StepsError) as exc:
        shortest_chain(entries, graph, ["toy_hf"], "toy_blend", read_config=read_config)
    assert exc.value.finding.code == "E-COMPOSE-NO-CHAIN"
    assert exc.value.finding.message == "no catalog step makes toy_blend: a pipeline starts from it"
    assert "list --consumes toy_blend" in exc.value.finding.fix


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
        "policy": "inputs.policy",
    }
    assert stages["to_hf"]["inputs"] == {
        "checkpoint": "train.checkpoint",
        "reference": "inputs.policy",
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
    assert data["inputs"]["blend"] == {"type": "toy_blend", "path": "???"}
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
    assert first["inputs"] == {"checkpoint": "inputs.checkpoint"}
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
    assert {n: i["type"] for n, i in data["inputs"].items()} == {
        "checkpoint": "megatron_checkpoint",
        "train": "nemo_gym_jsonl",
    }
    data["inputs"]["train"]["path"] = "rows.jsonl"
    data["inputs"]["checkpoint"]["path"] = "sft"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    proc = cli("plan", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    first, rlvr, last = plan["stages"]
    assert rlvr["inputs"]["policy"]["source"] == f"{first['id']}.hf"
    assert last["inputs"]["reference"]["source"] == f"{first['id']}.hf"


def test_a_newcomer_composes_data_to_a_trained_hf_model_on_the_first_try(cli, tmp_path):
    """The newcomer's first try (`--from data_blend --to hf_checkpoint`) was E-COMPOSE-NO-CHAIN:
    the policy to train is added as an input to fill in, and the file plans and dry-runs."""
    out = tmp_path / "my_pipe.yaml"
    proc = cli(*["compose", "--from", "data_blend", "--to", "hf_checkpoint"], "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[:4] == [
        f"wrote {out}: data_prep/rl_prep -> rl/nemo_rl/rlvr -> convert/megatron_to_hf",
        "fill in before `pipeline run`:",
        "  inputs.blend.path (data_blend)",
        "  inputs.policy.path (hf_checkpoint: The starting policy (usually an SFT checkpoint), "
        "as a local Hugging Face folder or a hub id; it is also the KL reference.)",
    ]
    assert "  data_prep/rl_prep -> rl/nemo_rl/dpo -> convert/megatron_to_hf  (--through dpo)" in (
        proc.stderr
    )
    assert f"next: python -m steps plan {out}" in proc.stderr
    data = yaml.safe_load(out.read_text())
    assert data["stages"][2]["inputs"] == {
        "checkpoint": "rlvr.checkpoint",
        "reference": "inputs.policy",
    }

    data["inputs"]["blend"]["path"] = str(REPO / "steps/data_prep/rl_prep/data/blend_tiny.yaml")
    data["inputs"]["policy"]["path"] = "Qwen/Qwen3-0.6B"
    for stage in data["stages"]:
        stage["config"] = "tiny"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    proc = cli("pipeline", "run", str(out), "--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "dry run: clean (3 stages)" in proc.stdout


def test_the_goal_among_the_starting_types_is_made_anew_from_the_others(cli):
    """The newcomer's second try (`--from data_blend,hf_checkpoint --to hf_checkpoint`) was
    E-COMPOSE-TRIVIAL; a goal is trivial only when it is all you start from."""
    proc = cli("compose", "--from", "data_blend,hf_checkpoint", "--to", "hf_checkpoint")
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(proc.stdout)
    assert [s["step"] for s in data["stages"]] == [
        "data_prep/rl_prep",
        "rl/nemo_rl/rlvr",
        "convert/megatron_to_hf",
    ]
    assert data["stages"][1]["inputs"]["policy"] == "inputs.policy"
    assert data["inputs"]["policy"] == {"type": "hf_checkpoint", "path": "???"}
    trivial = cli("compose", "--from", "hf_checkpoint", "--to", "hf_checkpoint")
    assert trivial.returncode == 2 and "E-COMPOSE-TRIVIAL" in trivial.stderr
    assert "--from data_blend,hf_checkpoint" in trivial.stderr


def test_a_reward_model_is_an_input_of_its_own_not_the_policy(cli):
    proc = cli(
        *["compose", "--from", "data_blend,hf_checkpoint", "--to", "nemo_rl_checkpoint"],
        *["--through", "rlhf", "--json"],
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    rlhf = doc["pipeline"]["stages"][1]
    assert rlhf["inputs"]["policy"] == "inputs.policy"
    assert rlhf["inputs"]["reward_model"] == "inputs.reward_model"
    assert [f.split(" ")[0] for f in doc["to_fill"]] == [
        "inputs.blend.path",
        "inputs.policy.path",
        "inputs.reward_model.path",
    ]


def test_compose_help_shows_examples_and_mistyped_names_get_suggestions(cli, capsys):
    with pytest.raises(SystemExit):
        main(["compose", "--help"])
    text = capsys.readouterr().out
    assert "examples:\n  python -m steps compose --from data_blend --to hf_checkpoint" in text
    proc = cli("compose", "--from", "data_blend", "--to", "hf")
    assert proc.returncode == 2 and "did you mean hf_checkpoint" in proc.stderr
    proc = cli("compose", "--from", "data_blend", "--to", "hf_checkpoint", "--through", "grpo")
    assert proc.returncode == 2 and "rl/nemo_rl/rlvr" in proc.stderr
