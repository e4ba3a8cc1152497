"""Reading a job from the outside: its logs, checkpoints and TensorBoard files, never NeMo-RL.

Owns: `logscan` (the failure kinds' prefilter), `terminal` (text fit for a terminal),
`classify` (the first failure), `progress`, `tfevents`. They take bytes, not hosts.
May import: `catalog` only (the failure kinds are `catalog.failures`' data).
"""
