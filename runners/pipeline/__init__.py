"""Pipelines: planned stages run in order, each as `python -m steps run`, cached and recorded.

Owns: `runner` (order, cache decisions, records, the summary), `selection` (--from, --to,
--only, --force), `stage` (one stage's cache key,
record and child process), `dry_run` (every stage planned in-process, nothing written),
`lineage` (fingerprints, stage records, W&B artifacts), `inputs` (inputs given by artifact
name); on a cluster (`--batch/--run PROFILE`): `cluster_run` (check every stage, then hand them
over), `cluster_plan` (each stage planned for its profile, one probe per profile),
`cluster_submit` (dependent Slurm jobs, a chain's gate, the pipeline record), `materialize`
(inputs an earlier stage writes, derived in the job when it starts), `jobs` (the pipeline as
the job commands see it). The plan itself is `catalog.planner`'s.
May import: `runners.run` (a stage is planned and submitted as `run` does it), `runners.bind`
and `runners.preflight` (an input derived and judged in the job), `runners.launch`
(targets, the submit path, job states), `runners.chain` (a chain stage's options),
`runners.rundir`, `runners.kinds`, `runners.config`, `runners.nemo_rl`, `runners.artifacts`,
`runners.digest`, `runners.secrets`, `catalog`. Nothing imports it but the CLI.
"""
