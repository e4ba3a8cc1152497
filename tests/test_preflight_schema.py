"""The NeMo-RL schema rule (required and unknown keys, lax types, enabled unions); the generator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from preflight_fixtures import dpo_config, grpo_config, run_rules

from catalog.upstream import NEMO_RL_COMMIT
from runners.preflight.schema import SCHEMA_DIR, load_schema

ROOT = Path(__file__).resolve().parents[1]


def _schema(findings: list, code: str) -> list:
    return [f for f in findings if f.code == code]


def test_missing_required_section_is_an_error(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    del cfg["loss_fn"]
    found = _schema(run_rules(cfg), "E-SCHEMA-KEY")
    assert [f.key for f in found] == ["loss_fn"]


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
    found = _schema(run_rules(cfg, "dpo"), "E-SCHEMA-KEY")
    assert [f.key for f in found] == ["dpo"]


def test_unresolved_values_are_left_to_their_own_rule(tmp_path: Path) -> None:
    cfg = grpo_config(tmp_path)
    cfg["grpo"]["num_prompts_per_step"] = "???"
    assert not _schema(run_rules(cfg), "E-SCHEMA-TYPE")


def test_schema_files_record_the_pinned_commit() -> None:
    for algo in ("grpo", "dpo"):
        doc = json.loads((SCHEMA_DIR / f"{algo}.json").read_text())
        assert doc["upstream"]["commit"] == NEMO_RL_COMMIT
        assert doc["upstream"]["generated"]
        assert doc["classes"][doc["root"]]["source"].startswith(f"nemo_rl/algorithms/{algo}.py:")
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
    out = tmp_path / "out"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools/gen_nemo_rl_schema.py"),
            "--nemo-rl",
            str(src),
            "--out",
            str(out),
            "--commit",
            "abc123",
            "--date",
            "2026-01-01",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    doc = json.loads((out / "dpo.json").read_text())
    assert doc["upstream"] == {
        "repo": "NVIDIA-NeMo/RL",
        "commit": "abc123",
        "generated": "2026-01-01",
        "generator": "tools/gen_nemo_rl_schema.py",
    }
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


def test_generator_rejects_a_folder_that_is_not_a_checkout(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools/gen_nemo_rl_schema.py"),
            "--nemo-rl",
            str(tmp_path),
            "--commit",
            "x",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "no nemo_rl/ package" in proc.stderr
