"""What runs: the config compiler, preflight, the launch, data prep, pipelines.

`run` orchestrates one step: `config` compiles, `bind` binds artifacts, `preflight` checks,
`rundir` writes the run dir, then `nemo_rl` (exec), `rl_prep` (in-process), `convert` or `launch`
(a cluster) take over. `pipeline` runs many steps; `check` is the CI gate. Packages form floors
(runners/README.md): a unit imports only units below it. Runners may import `catalog`; `catalog`
never imports runners, and nothing here imports the CLI (`steps`).
"""
