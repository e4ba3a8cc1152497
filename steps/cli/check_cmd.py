"""`check`: the CI contract gate over every catalog root; exit 1 on any error."""

from __future__ import annotations

import os
from dataclasses import replace

from steps.cli.common import add_catalog_arguments, add_json_argument, print_findings

HELP = "verify every claim in the catalog (manifests, configs, types, docs, patterns)"


def add_arguments(parser) -> None:
    add_json_argument(parser, "the findings and a summary")
    add_catalog_arguments(parser)
    parser.add_argument("--no-builtin", action="store_true", help="check only the --catalog roots")


def _relative(finding):
    """Shorter paths for people: relative to the working directory when inside it."""
    if not finding.path:
        return finding
    rel = os.path.relpath(finding.path)
    return finding if rel.startswith("..") else replace(finding, path=rel)


def usable_roots(args) -> list:
    """The roots to work on; a missing root or none at all is a usage error (exit 2)."""
    from catalog.discovery import catalog_roots, require_roots

    roots = catalog_roots(args.catalog, include_builtin=not args.no_builtin)
    if not roots:
        from catalog.errors import StepsError

        raise StepsError(
            "E-USAGE",
            "--no-builtin leaves no catalog root",
            fix="add --catalog DIR (or set $STEPS_PATH)",
            exit_code=2,
        )
    require_roots(roots)
    return roots


def run(args) -> int:
    from runners.check import check_catalog

    usable_roots(args)
    report = check_catalog(args.catalog, include_builtin=not args.no_builtin)
    code = 0 if report.ok else 1
    if args.json:
        from steps.cli.output import document, emit_json

        emit_json(document(report.findings, summary=report.summary()))
        return code
    print_findings([_relative(f) for f in report.findings])
    s = report.summary()
    print(
        f"check: {s['errors']} error(s), {s['warnings']} warning(s) in {s['steps']} step(s), "
        f"{s['patterns']} pattern(s), {len(s['roots'])} root(s)"
    )
    return code
