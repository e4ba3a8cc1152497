"""What runs: the config compiler, preflight, the launch, data prep, pipelines.

Packages form floors (runners/README.md): a unit imports only units below it and `catalog`;
`catalog` never imports runners, and nothing here imports the CLI (`steps`).
"""
