"""RL data preparation: a blend of datasets -> deterministic, sharded train/val/test JSONL."""

from __future__ import annotations

from runners.rl_prep.prepare import run_step

__all__ = ["run_step"]
