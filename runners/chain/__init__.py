"""Chains: one run trained to its end across Slurm segments (`run ... --batch P --until-done`).

Every segment is the same batch script on the same run dir and config: it decides from
training state before NeMo-RL starts and after it exits, and keeps the next segment queued
behind itself, so a time limit, a preemption or a requeue is followed at once with no process
of ours outside the allocation.

Owns: `settings` (what --until-done changes in the config), `submit` (the segment script and the
chain record at submit), `segment_program` (the in-job decisions, `begin|end`, run by the node's
python3 from the copy staged with the run dir), `rules` (the decisions on plain JSON, standard
library only: what both sides apply), `decide` (the rules asked with our records: go on or
stop, the latest complete checkpoint, a failed segment's kind), `record` (run.json's `chain`),
`follow` (status, cancel and follow from the submitting machine), `ray_driver` (a Ray chain:
the attached `run --run RAY_PROFILE --until-done` submits each segment as a Ray job and decides
with the same `decide`), `ray_resume` (the same command run again carries on the Ray chain a
detached driver left).
May import: `runners.launch`, `runners.monitor` (a failed segment's kind), `runners.config`,
`runners.nemo_rl` (which keys the running version knows), `runners.rundir`, `catalog`.
"""
