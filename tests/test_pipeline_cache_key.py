"""A pipeline stage's cache key: a NeMo-RL stage is keyed by the NeMo-RL it runs on.

The config is compiled as `run` compiles it for that NeMo-RL (its version overlays included), and
the version itself is part of the key, so switching NeMo-RL never reuses a cached stage.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nemo_rl_trees import nemo_rl_tree, toy_step, write

from catalog.discovery import discover
from catalog.pipeline import load_pipeline
from catalog.planner import plan_pipeline
from catalog.types import load_catalog_types
from runners.config.values import read_config
from runners.nemo_rl import checkout as nemo_rl
from runners.nemo_rl.schema import store
from runners.pipeline.stage import stage_key

PIPELINE = "name: toy\nstages:\n  - id: train\n    step: rl/toy_grpo\n"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NEMO_RL_HOME", raising=False)
    store.cached_schema_for.cache_clear()


@pytest.fixture
def stage(tmp_path: Path):
    """The one stage of a pipeline that trains with the toy GRPO step, as the planner plans it."""
    catalog = tmp_path / "catalog"
    toy_step(catalog)
    pf = load_pipeline(write(tmp_path / "pipe.yaml", PIPELINE))
    graph = load_catalog_types([catalog], include_builtin=False)
    entries = discover([catalog], include_builtin=False)
    plan = plan_pipeline(pf, entries, graph, tmp_path / "root", read_config)
    assert [s.runner for s in plan.stages] == ["nemo_rl"]
    return plan.stages[0]


def key_on(stage, tree: Path, overrides: tuple[str, ...] = ()) -> tuple[str, str, dict]:
    key, chash, sources, _ = stage_key(stage, list(overrides), {}, nemo_rl.resolve_target(tree, {}))
    return key, chash, sources


def test_switching_nemo_rl_version_changes_the_stage_key(tmp_path: Path, stage) -> None:
    old = nemo_rl_tree(tmp_path / "rl-0.6.0", "0.6.0")
    new = nemo_rl_tree(tmp_path / "rl-0.7.0", "0.7.0")
    assert key_on(stage, old)[0] == key_on(stage, old)[0]  # stable for one NeMo-RL
    old_key, old_hash, _ = key_on(stage, old)
    new_key, new_hash, sources = key_on(stage, new)
    assert new_key != old_key
    assert new_hash != old_hash  # 0.7.0 declares val_temperature: the overlay adds it
    assert any(p.endswith("overlays/default.yaml") for p in sources)


def test_same_config_on_another_nemo_rl_still_gets_another_key(tmp_path: Path, stage) -> None:
    seven = nemo_rl_tree(tmp_path / "rl-0.7.0", "0.7.0")
    later = nemo_rl_tree(tmp_path / "rl-0.7.1", "0.7.1")  # same source shape, same overlays
    key, chash, _ = key_on(stage, seven)
    later_key, later_hash, _ = key_on(stage, later)
    assert later_hash == chash and later_key != key


LOG_DIR_FROM_ENV = ("++logger.log_dir=${oc.env:MY_LOG_ROOT,/tmp/steps-logs}/toy",)


def test_the_environment_a_config_reads_is_part_of_the_key(
    tmp_path: Path, stage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run` pins `${oc.env:MY_LOG_ROOT,...}` into config.yaml: another value is another job."""
    tree = nemo_rl_tree(tmp_path / "rl-0.7.0", "0.7.0")
    monkeypatch.delenv("MY_LOG_ROOT", raising=False)
    unset = key_on(stage, tree, overrides=LOG_DIR_FROM_ENV)[0]
    monkeypatch.setenv("MY_LOG_ROOT", "/lustre/a")
    at_a = key_on(stage, tree, overrides=LOG_DIR_FROM_ENV)[0]
    monkeypatch.setenv("MY_LOG_ROOT", "/lustre/b")
    at_b = key_on(stage, tree, overrides=LOG_DIR_FROM_ENV)[0]
    assert len({unset, at_a, at_b}) == 3
    monkeypatch.setenv("MY_LOG_ROOT", "/lustre/a")
    assert key_on(stage, tree, overrides=LOG_DIR_FROM_ENV)[0] == at_a


def test_a_secret_variable_is_never_keyed_by_value(
    tmp_path: Path, stage, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = nemo_rl_tree(tmp_path / "rl-0.7.0", "0.7.0")
    token = ("++logger.wandb.name=${oc.env:WANDB_API_KEY,none}",)
    monkeypatch.setenv("WANDB_API_KEY", "k1")
    first = stage_key(stage, [*token], {}, nemo_rl.resolve_target(tree, {}))
    monkeypatch.setenv("WANDB_API_KEY", "k2")
    second = stage_key(stage, [*token], {}, nemo_rl.resolve_target(tree, {}))
    assert first[3] == [] and first[0] == second[0]
