"""Launch backends: `run` compiles and checks, then hands a `LaunchRequest` to a backend.

`local` execs on this machine through a launcher probed first (`local`), or runs rl_prep
in-process; `slurm` submits NeMo-RL's own `ray.sub` (or a plain srun job for steps that need no
Ray cluster) with the system's sbatch, here or over ssh; `ray` submits to an existing Ray
cluster through Ray's Job Submission API. A backend returns a job record that run.json keeps
(`job`); `jobs`, `status`, `logs` and `cancel` read it and ask the same backend. Nothing here
imports Ray unless a Ray profile is used.

Owns: `request` (the request and the Backend protocol), `backends/` (one module per executor,
found by the profile's `executor`: what it has and how it differs, as attributes; a new backend
is one module there), `profiles/` (env.toml: the models, Nemotron's keys, values), `slurm/`
(sbatch and ray.sub, the probe before submitting, a job's state), `ray/` (Ray Jobs, the SDK,
how a GPU job waits for the upstream judge there), `target` (request from a compiled run),
`shell` (commands here or over ssh), `records` (run.json job records, located by their
profile, and the backend that answers for one), `local` (the launcher that starts NeMo-RL
here, and one cached probe of its interpreter), `jobs` (run.json job records).
Also `observe` (a job's files and scheduler facts, read through `runners.monitor`), `job_code`
(the copy of our code a job carries), `remote_probe` (what the cluster side answers, standard
library only, with `slurm_queries`: the Slurm commands it asks, one parser each).
May import: `runners.monitor`, `runners.nemo_rl` and `runners.convert` (a converter step's
command), `runners.config`, `runners.rundir`, `runners.secrets`, `runners.omegaconf_internals`
(the OmegaConf releases a staged job takes), `catalog`; never
`runners.preflight` (preflight judges a submission; the launch layer does not judge itself).
"""
