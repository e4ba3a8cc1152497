"""The NeMo-RL schema rule (required and unknown keys, lax types, enabled unions); the generator."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from preflight_fixtures import context_for, dpo_config, grpo_config, run_rules

from catalog.upstream import NEMO_RL_COMMIT, NEMO_RL_RELEASES, NEMO_RL_SCHEMA_DIR
from runners.nemo_rl.schema import derive
from runners.nemo_rl.schema.store import cached_schema_for
from runners.preflight.schema import SchemaChecker

ROOT = Path(__file__).resolve().parents[1]
RLVR_DEFAULT = ROOT / "steps" / "rl" / "nemo_rl" / "rlvr" / "config" / "default.yaml"


def load_schema(algo: str) -> dict | None:
    """The pin's shipped schema, without a checkout."""
    found = cached_schema_for(algo, None, None)
    return found.doc if found else None


def _schema(findings: list, code: str) -> list:
    return [f for f in findings if f.code == code]


def test_missing_required_section_is_one_error(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    del cfg["loss_fn"]
    found = [f for f in run_rules(cfg) if f.key == "loss_fn"]
    assert [f.code for f in found] == ["E-CONFIG-SECTION"]


def test_missing_required_key_suggests_the_misspelt_one(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["train_micro_batchsize"] = cfg["policy"].pop("train_micro_batch_size")
    findings = run_rules(cfg)
    missing = _schema(findings, "E-SCHEMA-KEY")
    assert [f.key for f in missing] == ["policy.train_micro_batch_size"]
    assert "did you mean 'train_micro_batchsize'" in missing[0].message
    unknown = _schema(findings, "W-SCHEMA-UNKNOWN")
    assert [f.key for f in unknown] == ["policy.train_micro_batchsize"]
    assert not unknown[0].is_error


def test_unknown_key_is_a_warning_with_did_you_mean(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["grpo"]["normalise_rewards"] = True
    found = _schema(run_rules(cfg), "W-SCHEMA-UNKNOWN")
    assert [f.key for f in found] == ["grpo.normalise_rewards"]
    assert "'normalize_rewards'" in found[0].message and not found[0].is_error


def test_our_run_section_is_not_unknown(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["run"] = {"gym_root": "/x"}
    assert not _schema(run_rules(cfg), "W-SCHEMA-UNKNOWN")


def _schema_findings(config: Path) -> list:
    """The nemo_rl_schema findings for a config file, located at the file:line that set them."""
    step = config.parents[1] if config.parent.name == "config" else RLVR_DEFAULT.parents[1]
    ctx = context_for(config, step)
    return SchemaChecker(load_schema(ctx.manifest.run.algorithm), ctx).check_root(ctx.config)


def test_misspelt_key_in_a_user_config_is_an_error_at_its_line(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        f"defaults: {RLVR_DEFAULT}\n"
        "policy:\n"
        "  generation:\n"
        "    vllm_cfg:\n"
        "      use_deep_gem: true\n"
    )
    found = [f for f in _schema_findings(mine) if f.code == "E-SCHEMA-TYPO"]
    assert [(f.key, f.path, f.line) for f in found] == [
        ("policy.generation.vllm_cfg.use_deep_gem", str(mine), 5)
    ]
    assert "did you mean 'use_deep_gemm'" in found[0].message and found[0].is_error


def test_key_only_upstream_examples_set_is_known_at_that_path(tmp_path: Path) -> None:
    schema = load_schema("grpo")
    assert "use_deep_gemm" not in schema["classes"]["VllmSpecificArgs"]["fields"]
    source = schema["shipped"]["policy.generation.vllm_cfg"]["use_deep_gemm"]
    assert source.startswith("examples/configs/") and ".yaml:" in source
    cfg = grpo_config(tmp_path)
    cfg["policy"]["generation"]["vllm_cfg"]["use_deep_gemm"] = False
    cfg["policy"]["megatron_cfg"]["moe_router_dtype"] = "fp32"
    assert not _schema(run_rules(cfg), "W-SCHEMA-UNKNOWN")
    cfg["policy"]["use_deep_gemm"] = False  # known under vllm_cfg only
    found = _schema(run_rules(cfg), "W-SCHEMA-UNKNOWN")
    assert [f.key for f in found] == ["policy.use_deep_gemm"]
    assert "nor one NeMo-RL's example configs set" in found[0].message


def test_wrong_type_is_an_error(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["grpo"]["num_prompts_per_step"] = "eight"
    found = _schema(run_rules(cfg), "E-SCHEMA-TYPE")
    assert [f.key for f in found] == ["grpo.num_prompts_per_step"]


def test_lax_coercions_pydantic_accepts_are_fine(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["grpo"]["num_prompts_per_step"] = "8"
    cfg["grpo"]["val_at_start"] = "false"
    cfg["loss_fn"]["reference_policy_kl_penalty"] = 0
    cfg["policy"]["max_total_sequence_length"] = 1024.0
    assert not [f for f in run_rules(cfg) if f.code.startswith("E-SCHEMA")]


def test_string_for_a_number_field_is_rejected_for_str_fields(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["model_name"] = 7
    found = _schema(run_rules(cfg), "E-SCHEMA-TYPE")
    assert [f.key for f in found] == ["policy.model_name"]


def test_enabled_megatron_without_its_keys_is_an_error(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    del cfg["policy"]["megatron_cfg"]["optimizer"]
    found = _schema(run_rules(cfg), "E-SCHEMA-KEY")
    assert [f.key for f in found] == ["policy.megatron_cfg.optimizer"]


def test_disabled_section_may_keep_its_enabled_keys(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["dynamic_batching"] = {
        "enabled": False,
        "train_mb_tokens": 1024,
        "sequence_length_round": 64,
    }
    assert not [f for f in run_rules(cfg) if f.code.startswith(("E-SCHEMA", "W-SCHEMA"))]


def test_enabled_dynamic_batching_needs_its_keys(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["dynamic_batching"] = {"enabled": True}
    found = _schema(run_rules(cfg), "E-SCHEMA-KEY")
    assert {f.key for f in found} == {
        "policy.dynamic_batching.train_mb_tokens",
        "policy.dynamic_batching.sequence_length_round",
    }


def test_union_section_without_enabled_is_an_error(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["policy"]["dtensor_cfg"] = {}
    found = _schema(run_rules(cfg), "E-SCHEMA-KEY")
    assert [f.key for f in found] == ["policy.dtensor_cfg.enabled"]


def test_grpo_logger_needs_num_val_samples_to_print(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    del cfg["logger"]["num_val_samples_to_print"]
    found = _schema(run_rules(cfg), "E-SCHEMA-KEY")
    assert [f.key for f in found] == ["logger.num_val_samples_to_print"]


def test_dpo_needs_the_dpo_section_and_not_grpo_ones(tmp_path: Path) -> None:
    cfg = dpo_config(tmp_path)
    del cfg["dpo"]
    found = [f for f in run_rules(cfg, "dpo") if f.is_error and f.code != "E-SCHEMA-UNKNOWN"]
    assert [(f.code, f.key) for f in found] == [("E-CONFIG-SECTION", "dpo")]


def test_unresolved_values_are_left_to_their_own_rule(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["grpo"]["num_prompts_per_step"] = "???"
    assert not _schema(run_rules(cfg), "E-SCHEMA-TYPE")


def test_shipped_schemas_record_the_commit_of_their_version() -> None:
    expected = {"pin": NEMO_RL_COMMIT, **NEMO_RL_RELEASES}
    assert {p.name for p in NEMO_RL_SCHEMA_DIR.iterdir() if p.is_dir()} == set(expected)
    for label, commit in expected.items():
        for algo in ("grpo", "dpo"):
            doc = json.loads((NEMO_RL_SCHEMA_DIR / label / f"{algo}.json").read_text())
            assert doc["upstream"]["commit"] == commit
            root = doc["classes"][doc["root"]]["source"]
            assert root.startswith(f"nemo_rl/algorithms/{algo}.py:")
    assert load_schema("ppo") is None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_generator_reads_typeddicts_and_models_without_importing(tmp_path: Path) -> None:
    src = tmp_path / "RL"
    _write(src / "nemo_rl/__init__.py", "raise RuntimeError('must not be imported')\n")
    _write(
        src / "nemo_rl/models/policy/__init__.py",
        "from typing import Literal, NotRequired, TypedDict\n"
        "import torch\n"
        "class Off(TypedDict):\n    enabled: Literal[False]\n"
        "class On(TypedDict):\n    enabled: Literal[True]\n    size: int\n"
        "class PolicyConfig(TypedDict):\n    model_name: str\n"
        "    extra: NotRequired[dict[str, int] | None]\n    dtensor_cfg: On | Off\n",
    )
    body = (
        "from pydantic import BaseModel, Field\n"
        "from nemo_rl.models.policy import PolicyConfig\n"
        "class DPOConfig(BaseModel, extra='allow'):\n    seed: int = 42\n"
        "    names: list[str] = Field(default_factory=list)\n"
        "class MasterConfig(BaseModel, extra='allow'):\n    policy: PolicyConfig\n"
        "    dpo: DPOConfig\n    grpo: 'DPOConfig'\n"
    )
    _write(src / "nemo_rl/algorithms/dpo.py", body)
    _write(src / "nemo_rl/algorithms/grpo.py", body)
    _write(
        src / "examples/configs/dpo.yaml",
        "policy:\n  model_name: m\n  dtensor_cfg:\n    enabled: true\n    size: 1\n"
        "    cpu_offload: false\n  extra: {a: 1}\ndpo:\n  seed: 1\n  beta: 0.1\n",
    )
    _write(
        src / "examples/configs/recipes/llm/dpo-small.yaml",
        "defaults: ../../dpo.yaml\npolicy:\n  dtensor_cfg:\n    size: 2\n    _v2: true\n",
    )
    _write(src / "examples/configs/sft.yaml", "sft:\n  epochs: 1\npolicy:\n  sft_only: 1\n")
    doc = derive(src, upstream={"commit": "abc123"})["dpo"]
    assert doc["upstream"]["repo"] == "NVIDIA-NeMo/RL" and doc["upstream"]["commit"] == "abc123"
    policy = doc["classes"]["PolicyConfig"]["fields"]
    assert policy["model_name"] == {"type": {"t": "str"}, "required": True, "line": 9}
    assert policy["extra"]["required"] is False
    assert policy["extra"]["type"] == {
        "t": "union",
        "options": [{"t": "dict", "value": {"t": "int"}}, {"t": "none"}],
    }
    assert policy["dtensor_cfg"]["type"]["options"] == [
        {"t": "ref", "name": "On"},
        {"t": "ref", "name": "Off"},
    ]
    dpo = doc["classes"]["DPOConfig"]
    assert dpo["extra"] == "allow" and not dpo["fields"]["seed"]["required"]
    assert not dpo["fields"]["names"]["required"]
    assert doc["classes"]["MasterConfig"]["fields"]["grpo"]["type"] == {
        "t": "ref",
        "name": "DPOConfig",
    }
    # Keys the types do not declare but a dpo example sets, with the file:line that sets them;
    # size is declared by the enabled branch, sft.yaml is not a DPO config.
    assert doc["shipped"] == {
        "dpo": {"beta": "examples/configs/dpo.yaml:10"},
        "policy.dtensor_cfg": {
            "_v2": "examples/configs/recipes/llm/dpo-small.yaml:5",
            "cpu_offload": "examples/configs/dpo.yaml:6",
        },
    }
    assert derive(src, ("grpo",))["grpo"]["shipped"] == {}


def test_a_shipped_key_points_at_the_line_whose_value_the_loader_keeps(tmp_path: Path) -> None:
    src = tmp_path / "RL"
    _write(src / "nemo_rl/__init__.py", "raise RuntimeError('must not be imported')\n")
    _write(
        src / "nemo_rl/algorithms/dpo.py",
        "from typing import TypedDict\nclass DPOConfig(TypedDict):\n    seed: int\n"
        "class MasterConfig(TypedDict):\n    dpo: DPOConfig\n",
    )
    _write(
        src / "examples/configs/dpo.yaml",
        "base: &base\n  seed: 1\n  beta: 0.1\n  gamma: 1\n"
        "dpo:\n  <<: *base\n  beta: 0.2\n  eps: 1\n  eps: 2\n",
    )
    shipped = derive(src, ("dpo",))["dpo"]["shipped"]
    # a merged key at its anchor, unless overridden; a repeated key at its last line
    assert shipped["dpo"] == {
        "beta": "examples/configs/dpo.yaml:7",
        "eps": "examples/configs/dpo.yaml:9",
        "gamma": "examples/configs/dpo.yaml:4",
    }


def test_generator_tool_writes_a_version_folder_and_rejects_other_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from gen_nemo_rl_schema import main
    finally:
        sys.path.pop(0)
    assert main(["--nemo-rl", str(tmp_path), "--label", "0.6.0", "--commit", "x"]) == 2
    assert "no nemo_rl/ package" in capsys.readouterr().err
    src = tmp_path / "RL"
    _write(src / "nemo_rl/algorithms/grpo.py", "class MasterConfig(dict):\n    grpo: int\n")
    _write(src / "nemo_rl/algorithms/dpo.py", "class MasterConfig(dict):\n    dpo: int\n")
    out = tmp_path / "schemas"
    args = ["--nemo-rl", str(src), "--label", "0.8.0", "--commit", "c0ffee", "--out", str(out)]
    assert main(args) == 0
    doc = json.loads((out / "0.8.0" / "dpo.json").read_text())
    assert doc["upstream"]["version"] == "0.8.0" and "generated" not in doc["upstream"]
