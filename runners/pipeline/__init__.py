"""Pipelines: planned stages run in order, each as `python -m steps run`, cached and recorded.

Owns: `runner` (order, cache decisions, records, the summary), `stage` (one stage's cache key,
record and child process), `dry_run` (every stage planned in-process, nothing written),
`lineage` (fingerprints, stage records, W&B artifacts). The plan itself is `catalog.planner`'s.
May import: `runners.run` (a stage is planned as `run` plans it), `runners.kinds`, `runners.config`,
`runners.nemo_rl`, `runners.artifacts`, `runners.digest`, `runners.secrets`, `catalog`. Nothing
imports it but the CLI.
"""
