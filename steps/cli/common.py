"""Arguments and output shared by subcommands."""

from __future__ import annotations

import sys


def add_catalog_arguments(parser) -> None:
    parser.add_argument(
        "--catalog",
        action="append",
        default=[],
        metavar="DIR",
        help="extra catalog root with step folders (repeatable; also $STEPS_PATH)",
    )


def print_json(obj: object) -> None:
    import json

    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def print_findings(findings, stream=None) -> None:
    stream = stream or sys.stdout
    for f in findings:
        print(f.render(), file=stream)
