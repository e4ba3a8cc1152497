"""Slurm: sbatch (`backend`), the probe before submitting (`probe`), a job's state (`state`)."""
