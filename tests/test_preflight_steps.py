"""Every NeMo-RL step's tiny config compiles and passes preflight without an error finding."""

from __future__ import annotations

from pathlib import Path

import pytest
from preflight_fixtures import context_for

from runners.preflight import preflight

STEPS = Path(__file__).resolve().parents[1] / "steps" / "rl" / "nemo_rl"
TINY = sorted(p for p in STEPS.glob("*/config/*tiny.yaml"))


@pytest.mark.parametrize("config", TINY, ids=[f"{p.parts[-3]}/{p.name}" for p in TINY])
def test_tiny_config_has_no_preflight_error(config: Path) -> None:
    ctx = context_for(config, config.parents[1])
    errors = [f.render() for f in preflight(ctx) if f.is_error]
    assert errors == []


def test_every_nemo_rl_step_has_a_tiny_config() -> None:
    steps = {p.parent.name for p in STEPS.glob("*/step.toml")}
    assert steps and steps == {p.parts[-3] for p in TINY}
