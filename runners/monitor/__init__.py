"""Reading a job from the outside: its logs, checkpoints and TensorBoard files, never NeMo-RL.

Owns: `logscan` (streams logs through the failure kinds' literal prefilter), `terminal` (text
made fit to print on a terminal), `classify` (names the first failure), `progress` (how far
training got), `tfevents` (TensorBoard event files). They take bytes and lines, not hosts:
`runners/launch/observe.py` fetches them here or over ssh.
May import: `catalog` only (the failure kinds are `catalog.failures`' data).
"""
