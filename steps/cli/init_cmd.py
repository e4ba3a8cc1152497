"""`init STEP[:CONFIG] [DEST]`: a new config of your own that inherits a shipped one, so it
holds only what you change (NeMo-RL's habit of an own YAML on top of a recipe)."""

from __future__ import annotations

from pathlib import Path

from steps.cli import cp_cmd

HELP = "start your own config on top of a step's (STEP[:CONFIG] [DEST] [--force])"


def add_arguments(parser) -> None:
    cp_cmd.add_arguments(parser, "rl/nemo_rl/rlvr:nemo_gym", "./my_CONFIG.yaml")


def run(args) -> int:
    from runners.config.step_configs import init_config

    path = init_config(args.ref, args.dest, Path.cwd(), force=args.force)
    return cp_cmd.report(args, path, "inherited by")
