"""The NeMo-RL that will run: its checkout, version, scripts and config schema.

Owns: `checkout` (find the checkout, read its version, pick the script, build the argv, exec),
`schema` (the config schema derived from a checkout's source without importing it, cached per
commit, shipped for the supported releases), `dcp_export` (a DTensor run's checkpoint through
NeMo-RL's own converter script).
May import: `runners.config` (a config is compiled for a version's overlays), `catalog`.
"""
