"""Chains: one run trained to its end across segments (`run ... --until-done`).

Every Slurm segment is the same batch script on the same run dir and config: it decides before
NeMo-RL starts and after it exits, and keeps the next segment queued behind itself, so a time
limit, a preemption or a requeue is followed with no process of ours outside the allocation.

Owns: `settings` (what --until-done changes in the config), `submit` (the segment script and
record), `segment_program` (the in-job decisions), `rules` (the decisions on plain JSON, stdlib
only), `decide` (the rules asked with our records), `record` (run.json's `chain`), `follow`
(status and cancel from the submitting machine), `ray_driver` (a Ray chain, driven by the
attached `run`), `ray_resume` (a detached Ray chain carried on).
May import: `runners.launch`, `runners.monitor` (a failed segment's kind), `runners.config`,
`runners.nemo_rl` (which keys the running version knows), `runners.rundir`, `catalog`.
"""
