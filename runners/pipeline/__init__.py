"""Pipelines: planned stages run in order, each as `python -m steps run`, cached and recorded.

Owns: `runner` (order, cache decisions, records, the summary), `selection` (--from, --to, --only,
--force), `stage` (one stage's cache key, record and child process), `dry_run` (every stage planned
in-process), `lineage` (fingerprints, W&B artifacts); on a cluster: `cluster_plan` (each stage
planned for its profile, one probe per profile), `cluster_submit` (then queued as dependent Slurm
jobs, a chain's gate, or driven from here), `materialize` (inputs an earlier stage writes, derived
in the job), `jobs` (the pipeline as the job commands see it).
May import: `runners.run`, `runners.bind`, `runners.preflight`, `runners.launch`, `runners.chain`,
`runners.rundir`, `runners.kinds`, `runners.config`, `runners.nemo_rl`, `runners.artifacts`,
`runners.digest`, `runners.secrets`, `catalog`. Nothing imports it but the CLI.
"""
