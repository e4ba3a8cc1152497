"""`init STEP[:CONFIG] [DEST]`: a new config of your own that inherits a shipped one, so it
holds only what you change (NeMo-RL's habit of an own YAML on top of a recipe)."""

from __future__ import annotations

from pathlib import Path

from steps.cli.common import add_json_argument

HELP = "start your own config on top of a step's (STEP[:CONFIG] [DEST] [--force])"


def add_arguments(parser) -> None:
    parser.add_argument("ref", metavar="STEP[:CONFIG]", help="e.g. rl/nemo_rl/rlvr:nemo_gym")
    parser.add_argument("dest", nargs="?", help="a file or folder (default: ./my_CONFIG.yaml)")
    parser.add_argument("--force", action="store_true", help="replace DEST if it exists")
    add_json_argument(parser, "the written path")


def run(args) -> int:
    from runners.config.step_configs import init_config
    from steps.cli.cp_cmd import report

    path = init_config(args.ref, args.dest, Path.cwd(), force=args.force)
    return report(args, path, "inherited by")
