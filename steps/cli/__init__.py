"""The CLI: one module per subcommand (`HELP`, `add_arguments(parser)`, `run(args)`), only the
chosen one imported. `main` owns the exit codes (catalog.errors) and turns every failure into a
finding: text on stderr, or the one JSON document with `--json` (steps/cli/output.py).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from importlib import import_module
from typing import Any

COMMANDS: dict[str, str] = {
    "list": "steps.cli.list_cmd",
    "show": "steps.cli.show_cmd",
    "check": "steps.cli.check_cmd",
    "docs": "steps.cli.docs_cmd",
    "explain": "steps.cli.explain_cmd",
    "init": "steps.cli.init_cmd",
    "cp": "steps.cli.cp_cmd",
    "run": "steps.cli.run_cmd",
    "validate": "steps.cli.validate_cmd",
    "plan": "steps.cli.plan_cmd",
    "compose": "steps.cli.compose_cmd",
    "pipeline": "steps.cli.pipeline_cmd",
    "jobs": "steps.cli.jobs_cmd",
    "status": "steps.cli.status_cmd",
    "diagnose": "steps.cli.diagnose_cmd",
    "logs": "steps.cli.logs_cmd",
    "cancel": "steps.cli.cancel_cmd",
    "chain-step": "steps.cli.chain_step_cmd",
    "upstream-judge": "steps.cli.upstream_judge_cmd",
    "materialize-inputs": "steps.cli.materialize_cmd",
    "lineage": "steps.cli.lineage_cmd",
}
PROG = "python -m steps"
DEBUG_FLAG = "--debug"
REPORT_HINT = (
    "this is a bug in steps, not in your input: report it to the maintainers with the command "
    f"line and the traceback that `{DEBUG_FLAG}` prints"
)


def _formatter(prog: str):
    """argparse's formatter at the terminal width (argparse's own default imports shutil)."""
    import argparse

    from steps.cli.output import terminal_width

    return argparse.HelpFormatter(prog, width=max(terminal_width(sys.stderr) - 2, 40))


class UsageError(Exception):
    """A command line argparse rejects; `main` prints it (usage + message, or JSON), exit 2."""

    def __init__(self, parser, message: str) -> None:
        super().__init__(message)
        self.parser, self.message = parser, message


def _parser_class():
    import argparse

    class Parser(argparse.ArgumentParser):
        """argparse that raises instead of exiting (`--json` carries usage errors too); with
        `intermixed` set, options may come between positionals (`run STEP k=v --dry-run`)."""

        intermixed = False

        def error(self, message: str):
            raise UsageError(self, message)

        def parse_known_args(self, args=None, namespace=None):
            if not self.intermixed:
                return super().parse_known_args(args, namespace)
            self.intermixed = False  # the intermixed parse comes back here, twice
            try:
                return self.parse_intermixed_args(args, namespace), []
            finally:
                self.intermixed = True

    return Parser


def build_parser(only: str | None = None):
    parser = _parser_class()(
        prog=PROG,
        description="Step catalog and contract-checking runner for NeMo-RL alignment jobs.",
        epilog=f"{DEBUG_FLAG} (anywhere on the line): print the traceback of an internal error. "
        "Exit codes: 0 ok, 1 findings, 2 usage or setup, 70 internal error, 130 interrupted.",
        formatter_class=_formatter,
    )
    parser.add_argument(DEBUG_FLAG, action="store_true", help="print tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [only] if only else COMMANDS:
        mod = import_module(COMMANDS[name])
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP, formatter_class=_formatter)
        mod.add_arguments(p)
        p.set_defaults(_handler=mod.run)
    return parser


def _split_debug(argv: list[str]) -> tuple[list[str], bool]:
    """`--debug` is global: taken out wherever it stands (before a `--` separator)."""
    end = argv.index("--") if "--" in argv else len(argv)
    head = [a for a in argv[:end] if a != DEBUG_FLAG]
    return head + argv[end:], len(head) != end


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code (never raises except SystemExit from --help)."""
    argv, debug = _split_debug(list(sys.argv[1:] if argv is None else argv))
    only = argv[0] if argv and argv[0] in COMMANDS else None
    as_json = "--json" in argv[: argv.index("--") if "--" in argv else len(argv)]
    from steps.cli import output

    before = output.emitted()
    with _redacting_output():
        return _main(argv, only, as_json, debug, before)


class _Redacted:
    """A text stream that writes with every secret environment variable's value as `***`: a
    profile value, a path or an error that holds one is never printed (issue 39)."""

    def __init__(self, stream: Any, values: dict[str, str]) -> None:
        self._stream, self._values = stream, values

    def write(self, text: str) -> int:
        from runners.secrets import redact_text

        self._stream.write(redact_text(text, self._values))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _redacting_output() -> Iterator[None]:
    """stdout and stderr through `_Redacted` while secrets are set in the environment."""
    import os

    from runners.secrets import secret_values

    values = secret_values(os.environ)
    if not values:
        yield
        return
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Redacted(out, values), _Redacted(err, values)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: list[str], only: str | None, as_json: bool, debug: bool, before: int) -> int:
    try:
        parser = build_parser(only)
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help(sys.stderr)
            return 2
        as_json = as_json or bool(getattr(args, "json", False))
        args._argv = argv  # the command line as given (`run` records it in run.json)
        return int(args._handler(args) or 0)
    except UsageError as exc:
        return _fail(_usage_finding(exc), 2, only, as_json, before, exc.parser)
    except KeyboardInterrupt:
        return _interrupted(only, as_json, before)
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except Exception as exc:
        from catalog.errors import StepsError

        if isinstance(exc, StepsError):
            return _fail(exc.finding, exc.exit_code, only, as_json, before)
        if _caused_by_interrupt(exc):
            return _interrupted(only, as_json, before)
        return _internal_error(exc, only or (argv[0] if argv else None), as_json, before, debug)


def _interrupted(command, as_json: bool, before: int) -> int:
    from catalog.errors import Finding

    code = _fail(Finding("E-INTERRUPTED", "interrupted (Ctrl-C)"), 130, command, as_json, before)
    clear_interrupt_mark()
    return code


def clear_interrupt_mark() -> None:
    """After a handled Ctrl-C: one that passed through code compiled from a string (dataclass
    methods) leaves CPython's "unhandled KeyboardInterrupt" mark set, and `python -m` then dies
    by SIGINT instead of exiting 130; running a string clears it (pythonrun.c,
    run_eval_code_obj)."""
    exec("pass")


def _caused_by_interrupt(exc: BaseException) -> bool:
    """A Ctrl-C that Python wrapped in another error (what `__set_name__` raises while an
    import builds a class becomes a RuntimeError) is still an interrupt, not a bug of ours."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _usage_finding(exc: UsageError):
    from catalog.errors import Finding

    return Finding("E-USAGE", exc.message, fix=f"see `{exc.parser.prog} --help`")


def _fail(finding, code: int, command, as_json: bool, before: int, parser=None) -> int:
    """Print a failure once: as the JSON document (unless one went out already), else text."""
    from steps.cli import output

    if as_json and output.emitted() == before:
        output.emit_json(output.error_document(finding, code, command))
    elif parser is not None:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {finding.message}", file=sys.stderr)
    else:  # a message may quote a remote's stderr (scancel, ssh): no control sequence passes
        from runners.monitor.terminal import terminal_safe

        print(terminal_safe(finding.render()), file=sys.stderr)
    return code


def _internal_error(exc: Exception, command, as_json: bool, before: int, debug: bool) -> int:
    """One finding naming the bug and how to report it; the traceback only with --debug."""
    from catalog.errors import EXIT_INTERNAL, Finding

    if debug:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    where = f" in `{PROG} {command}`" if command else ""
    import os

    from runners.secrets import redact_text, secret_values

    detail = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    detail = redact_text(detail, secret_values(os.environ))  # an exception may quote a token
    finding = Finding("E-INTERNAL", f"internal error{where}: {detail}", fix=REPORT_HINT)
    return _fail(finding, EXIT_INTERNAL, command, as_json, before)


def _silence_stdout() -> None:
    """After a closed pipe (`steps list | head`), keep the interpreter's final flush quiet."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
