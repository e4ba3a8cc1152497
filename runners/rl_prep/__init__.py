"""RL data preparation: a blend of datasets -> deterministic, sharded train/val/test JSONL.

Runs in-process (CPU work, no NeMo-RL). Owns: `spec` (the dataset spec both the blend and its
options read), `blend` (the blend file), `options` and `transforms` (per-dataset settings),
`sources` and `hub` (reading local files, the Hub; Parquet, Arrow, JSON arrays and CSV through
`catalog.contracts.columnar` and `builder_rows`), `split` (the
seeded per-row split), `rowcheck` (each row against its contract), `chunks`, `build` and
`worker_preload` (the worker pool), `shards` and `output` (atomic sharded output and its
manifest), `prepare` (the step).
May import: `runners.digest`, `catalog`. Imported by `run` (the step) and by preflight (its dry
checks).
"""

from __future__ import annotations

from runners.rl_prep.prepare import run_step

__all__ = ["run_step"]
