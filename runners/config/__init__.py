"""The NeMo-RL config, compiled exactly as NeMo-RL's `load_config` and Hydra overrides do.

Owns: `compiler` (defaults chains, resolvers, file:line of every key) with `files`,
`plain_merge` and `omegaconf_merge` (reading and merging a chain), `overrides` and
`override_apply` (Hydra's grammar, applied), `override_findings`, `overlays` (keys only newer
NeMo-RL reads), `env_pins`, `secret_overrides`, `values` (the planner's view), `compile_once`,
`step_configs` (`STEP:CONFIG` in `defaults:`, `cp`, `init`). Everything that reads a config
comes through here.
May import: `runners.rundir`, `runners.secrets`, `runners.omegaconf_internals`, `catalog`.
"""
