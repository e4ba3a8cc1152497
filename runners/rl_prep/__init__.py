"""RL data preparation: a blend of datasets -> deterministic, sharded train/val/test JSONL.

Owns: `spec`, `blend`, `options` and `transforms` (what to prepare, a blend's `map`), `sources`
(local files and the Hub caches), `placeholders` (rows rebuilt), `split`, `chunks` (each row
checked by its contract), `build` and `worker_preload` (the worker pool), `shards` and `output`
(atomic sharded output, its manifest), `first_rows` (the dry run's look), `prepare`.
May import: `runners.digest`, `catalog`. Imported by `run` (the step) and by preflight.
"""

from __future__ import annotations

from runners.rl_prep.prepare import run_step

__all__ = ["run_step"]
