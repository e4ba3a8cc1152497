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
from runners.pipeline.stage import nemo_rl_record, stage_key

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


def key_on(stage, tree: Path, previous: dict | None = None) -> tuple[str, str, dict]:
    return stage_key(stage, [], {}, previous, nemo_rl.resolve_target(tree, {}))


def record_of(stage, tree: Path) -> dict:
    """The parts of a completed stage's record that `stage_key` may trust."""
    _, chash, sources = key_on(stage, tree)
    target = nemo_rl.resolve_target(tree, {})
    return {
        "config": str(stage.config),
        "overrides": [],
        "config_hash": chash,
        "config_sources": sources,
        "nemo_rl": nemo_rl_record(target),
    }


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


def test_a_previous_config_hash_is_reused_only_for_the_same_nemo_rl(tmp_path: Path, stage) -> None:
    old = nemo_rl_tree(tmp_path / "rl-0.6.0", "0.6.0")
    new = nemo_rl_tree(tmp_path / "rl-0.7.0", "0.7.0")
    previous = {**record_of(stage, old), "config_hash": "as recorded"}
    assert key_on(stage, old, previous)[1] == "as recorded"  # unchanged files: not recompiled
    assert key_on(stage, new, previous)[1] == key_on(stage, new)[1]  # recompiled for 0.7.0
