"""The CLI: one module per subcommand, each with `HELP`, `add_arguments(parser)`, `run(args)`.

Only the chosen subcommand's module is imported, so `list` pays for nothing else.
"""

from __future__ import annotations

import sys
from importlib import import_module

COMMANDS: dict[str, str] = {
    "list": "steps.cli.list_cmd",
    "show": "steps.cli.show_cmd",
    "check": "steps.cli.check_cmd",
    "docs": "steps.cli.docs_cmd",
    "run": "steps.cli.run_cmd",
    "validate": "steps.cli.validate_cmd",
    "plan": "steps.cli.plan_cmd",
    "compose": "steps.cli.compose_cmd",
    "pipeline": "steps.cli.pipeline_cmd",
    "jobs": "steps.cli.jobs_cmd",
    "status": "steps.cli.status_cmd",
    "logs": "steps.cli.logs_cmd",
    "cancel": "steps.cli.cancel_cmd",
}


def _available() -> dict[str, str]:
    from importlib.util import find_spec

    return {name: mod for name, mod in COMMANDS.items() if find_spec(mod) is not None}


def _formatter(prog: str):
    """argparse's formatter sized with `os` (argparse's own default imports shutil: ~5 ms)."""
    import argparse
    import os

    try:
        width = os.get_terminal_size().columns
    except OSError:
        width = int(os.environ.get("COLUMNS", "80") or 80)
    return argparse.HelpFormatter(prog, width=max(width - 2, 40))


def _steps_error() -> type:
    """Evaluated only when an exception reaches `main`, so a clean `list` never imports it."""
    from catalog.errors import StepsError

    return StepsError


def build_parser(only: str | None = None):
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m steps",
        description="Step catalog and contract-checking runner for NeMo-RL alignment jobs.",
        formatter_class=_formatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = [only] if only else list(_available())
    for name in names:
        mod = import_module(COMMANDS[name])
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP, formatter_class=_formatter)
        mod.add_arguments(p)
        p.set_defaults(_handler=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    only = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(only)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args._handler(args) or 0)
    except _steps_error() as exc:
        print(exc.finding.render(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
