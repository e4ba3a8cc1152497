"""GRPO with a reward-model environment trains on what grpo.setup leaves it: the reward model's
nodes (several nodes) or GPUs (one node) are not the policy's (v0.7.0 grpo.py:520-576)."""

from __future__ import annotations

from pathlib import Path

import yaml
from preflight_fixtures import context_for, grpo_config

from runners.preflight import preflight

RLVR = Path(__file__).resolve().parent.parent / "steps" / "rl" / "nemo_rl" / "rlvr"


def _fit(tmp_path: Path, nodes: int, rm: dict, tp: int, uses_rm: bool = True) -> list:
    """E-PARALLEL-FIT findings of a real GRPO config file with `env.reward_model`."""
    cfg = grpo_config(tmp_path)
    cfg["cluster"] = {"num_nodes": nodes, "gpus_per_node": 8}
    cfg["env"]["reward_model"] = {"enabled": True, "model_name": "rm", "resources": rm}
    if uses_rm:
        cfg["data"]["default"]["env_name"] = "reward_model"
    cfg["policy"]["megatron_cfg"]["tensor_model_parallel_size"] = tp
    path = tmp_path / "grpo_rm.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    found = preflight(context_for(path, RLVR, "0.7.0"))
    return [f for f in found if f.code == "E-PARALLEL-FIT"]


def test_reward_model_nodes_are_not_training_nodes(tmp_path: Path) -> None:
    found = _fit(tmp_path, nodes=2, rm={"num_nodes": 1, "gpus_per_node": 8}, tp=16)
    assert len(found) == 1
    assert "the 8 GPUs of training (1 of 2 nodes; 1 reward model)" in found[0].message


def test_reward_model_on_one_node_takes_its_gpus(tmp_path: Path) -> None:
    found = _fit(tmp_path, nodes=1, rm={"num_nodes": 1, "gpus_per_node": 4}, tp=8)
    assert len(found) == 1
    assert "4 GPUs of training (gpus_per_node 8 - 4 for the reward model)" in found[0].message


def test_reward_model_fitting_what_is_left_passes(tmp_path: Path) -> None:
    assert _fit(tmp_path, nodes=2, rm={"num_nodes": 1, "gpus_per_node": 8}, tp=8) == []


def test_reward_model_section_no_split_uses_reserves_nothing(tmp_path: Path) -> None:
    rm = {"num_nodes": 1, "gpus_per_node": 8}
    assert _fit(tmp_path, nodes=2, rm=rm, tp=16, uses_rm=False) == []


def test_reward_model_holding_every_node_is_one_error(tmp_path: Path) -> None:
    found = _fit(tmp_path, nodes=2, rm={"num_nodes": 2, "gpus_per_node": 8}, tp=1)
    assert [f.key for f in found] == ["env.reward_model.resources.num_nodes"]
    assert "holds 2 of 2 nodes" in found[0].message
