"""Artifacts by name: the registry under a runs root, names, lineage, and their W&B mirror.

Owns: `names` (the naming convention, references), `registry` (the file, its lock, versions,
aliases), `pending` (versions of runs that end elsewhere, settled later), `resolve` (references ->
paths, a pipeline's inputs by name), `record` (a run's outputs in), `wandb_log` (env.toml's
`[wandb]` table checked; W&B imported only when a run logs to it), `lineage` (how an artifact
was made).
May import: `runners.digest`, `runners.rundir`, catalog.
"""
