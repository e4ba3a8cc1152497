"""Artifacts by name: the registry under a run root, names, lineage, and their W&B mirror.

Every run that produces an artifact records it in `<runs root>/artifacts.json` under a name that
follows Nemotron's convention (`DataBlendsArtifact-rl`, `ModelArtifact-rlvr`), as a new version
(v0, v1, ...) when its content digest is new, with the alias `latest` moved to it. `--input
PORT=NAME[:ALIAS|:vN]` resolves such a reference (here, else from W&B when online and
configured), refused when the artifact's type is not the port's or the version is not ready. A run
that ends elsewhere (an exec into NeMo-RL, a cluster job) registers its outputs pending at launch;
they are settled when the registry is next read. W&B is imported only when a run logs to it.

Owns: `names` (the naming convention, references), `registry` (the file, its lock, versions,
aliases, digests), `pending` (versions of runs that end elsewhere, settled from what steps
recorded), `resolve` (references -> paths, type and readiness checked), `record` (a run's outputs
in, with its inputs), `wandb_log` (a run's inputs and outputs as W&B artifacts), `wandb_check`
(env.toml's `[wandb]` table as W&B takes it, before any work), `lineage` (how an artifact was
made, what a run produced).
May import: `runners.digest`, `runners.rundir`, catalog.
"""
