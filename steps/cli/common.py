"""Arguments and output shared by subcommands (JSON goes through steps/cli/output.py)."""

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


def add_run_arguments(parser, ref: bool = True) -> None:
    """RUN (a run dir, a job id or `last`) and --runs-dir, shared by the job commands."""
    if ref:
        parser.add_argument("ref", metavar="RUN", help="run dir, job id, or `last`")
    parser.add_argument(
        "--runs-dir", metavar="DIR", help="runs root (else $STEPS_RUNS_DIR, else ./runs)"
    )


def add_json_argument(parser, what: str = "the result") -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help=f"print {what} as one JSON document on stdout (errors are findings in it)",
    )


def print_findings(findings) -> None:
    """Findings as text, on stderr (stdout is for results)."""
    for f in findings:
        print(f.render(), file=sys.stderr)
