"""`cp STEP[:CONFIG] [DEST]`: a shipped step config copied into your project (as `tune cp`)."""

from __future__ import annotations

from pathlib import Path

from steps.cli.common import add_json_argument

HELP = "copy a step's config into your project to edit (STEP[:CONFIG] [DEST] [--force])"


def add_arguments(parser, example="rl/nemo_rl/dpo:tiny or rlvr", dest="the current folder") -> None:
    parser.add_argument("ref", metavar="STEP[:CONFIG]", help=f"e.g. {example}")
    parser.add_argument("dest", nargs="?", help=f"a file or folder (default: {dest})")
    parser.add_argument("--force", action="store_true", help="replace DEST if it exists")
    add_json_argument(parser, "the written path")


def run(args) -> int:
    from runners.config.step_configs import copy_config

    path = copy_config(args.ref, args.dest, Path.cwd(), force=args.force)
    return report(args, path, "copied to")


def report(args, path: Path, verb: str) -> int:
    if args.json:
        from steps.cli.output import document, emit_json

        emit_json(document(path=str(path)))
    else:
        print(f"{args.ref} {verb} {path}")
    return 0
