"""`docs`: regenerate ARTIFACTS.md, PATTERNS.md and the step.toml JSON Schema."""

from __future__ import annotations

import sys

from steps.cli.common import add_catalog_arguments

HELP = "regenerate ARTIFACTS.md, PATTERNS.md and catalog/schema/step.schema.json"


def add_arguments(parser) -> None:
    add_catalog_arguments(parser)
    parser.add_argument(
        "--no-builtin",
        action="store_true",
        help="only the --catalog roots (their docs live in each root)",
    )


def run(args) -> int:
    from catalog.discovery import catalog_roots
    from catalog.docs import write_docs
    from steps.cli.common import print_findings

    for root in catalog_roots(args.catalog, include_builtin=not args.no_builtin):
        changed, findings = write_docs(root)
        print_findings(findings, sys.stderr)
        for path in changed:
            print(f"wrote {path}")
        if not changed:
            print(f"up to date: docs of {root}")
    return 0
