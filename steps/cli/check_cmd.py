"""`check`: the CI contract gate over every catalog root; exit 1 on any error."""

from __future__ import annotations

import os
from dataclasses import replace

from steps.cli.common import add_catalog_arguments, print_json

HELP = "verify every claim in the catalog (manifests, configs, types, docs, patterns)"


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print findings and a summary as JSON")
    add_catalog_arguments(parser)
    parser.add_argument("--no-builtin", action="store_true", help="check only the --catalog roots")


def _relative(finding):
    """Shorter paths for people: relative to the working directory when inside it."""
    if not finding.path:
        return finding
    rel = os.path.relpath(finding.path)
    return finding if rel.startswith("..") else replace(finding, path=rel)


def run(args) -> int:
    from runners.check import check_catalog

    report = check_catalog(args.catalog, include_builtin=not args.no_builtin)
    if args.json:
        print_json(
            {"findings": [f.to_dict() for f in report.findings], "summary": report.summary()}
        )
    else:
        for f in report.findings:
            print(_relative(f).render())
        s = report.summary()
        print(
            f"check: {s['errors']} error(s), {s['warnings']} warning(s) in {s['steps']} step(s), "
            f"{s['patterns']} pattern(s), {len(s['roots'])} root(s)"
        )
    return 0 if report.ok else 1
