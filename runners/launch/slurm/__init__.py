"""Slurm: `backend` (sbatch NeMo-RL's ray.sub, or a plain srun job, here or over ssh),
`probe` (what one round trip to the cluster sees before submitting), `state` (a job's state,
lookup and follow stream). The Slurm commands the cluster side runs are `slurm_queries`, beside
`remote_probe`, which ships them as one program."""
