"""The NeMo-RL that will run: its checkout, version, scripts and config schema.

Owns: `checkout` (find it, read its version, pick the script, exec), `pins` (its package pins),
`schema` (derived from its source, cached per commit, shipped per release), `dcp_export`.
May import: `runners.config` (a config is compiled for a version's overlays), `catalog`.
"""
