"""The NeMo-RL config: compiled exactly as NeMo-RL's `load_config` and Hydra overrides do.

Owns: `compiler` (defaults chains, overrides, resolvers, file:line of every key), `files`
(YAML read as OmegaConf reads it, kept in `catalog.content_memo`), `plain_merge` (the chain
merged as plain data, as OmegaConf merges it), `omegaconf_merge` (OmegaConf's own merge where
plain data cannot say, and E-CONFIG-MERGE), `overrides` (Hydra's override
grammar, lists read in linear time), `override_apply` (tokens applied as Hydra applies them,
adds under one section at once), `overlays` (keys only newer NeMo-RL versions read),
`values` (plain values for the planner), `secret_overrides` (secret override values kept off
command lines), `step_refs` (`defaults:` naming a shipped step config), `step_copy` (`init` and
`cp`: a shipped config brought into the user's project).
May import: `runners.rundir`, `runners.secrets`, `runners.omegaconf_internals` (all we use of
OmegaConf beyond its public API), `catalog`. Everything that reads a config
(binding, preflight, check, pipelines, launch) comes through here.
"""
