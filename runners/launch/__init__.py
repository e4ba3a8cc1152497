"""Launch backends: `run` compiles and checks, then hands a `LaunchRequest` to a backend
(local exec, Slurm's sbatch here or over ssh, Ray's Job Submission API), whose job record
run.json keeps for `jobs`, `status`, `logs` and `cancel`. Ray is imported only for Ray profiles.

Owns: `request`, `backends/` (one module per executor), `profiles/` (env.toml), `slurm/`, `ray/`,
`target` (a compiled run's request), `shell` (commands here or over ssh), `records` and `jobs`
(run.json job records), `local` (the launcher here), `observe` (a job's files and facts),
`job_code` (our code a job carries), `remote_probe` and `slurm_queries` (the cluster side).
May import: `runners.monitor`, `runners.nemo_rl` and `runners.convert` (a converter step's
command), `runners.config`, `runners.rundir`, `runners.secrets`, `runners.omegaconf_internals`
(the OmegaConf releases a staged job takes), `catalog`; never
`runners.preflight` (preflight judges a submission; the launch layer does not judge itself).
"""
