"""`validate TYPE PATH`: check a real artifact against its type's contract before any GPU starts."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

HELP = "validate a file, folder of shards, rl_prep manifest or checkpoint against its type"
PROGRESS_MIN_BYTES = 256 << 20


def add_arguments(parser) -> None:
    parser.add_argument("type", help="artifact type (`python -m steps list --types` lists them)")
    parser.add_argument("path", help="file, folder of *.jsonl shards, manifest.json or checkpoint")
    parser.add_argument("--step", help="take contract options from this step's config")
    parser.add_argument(
        "-c", "--config", help="config name of --step (default: its default), or a YAML path"
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="contract option, e.g. prompt_key=question or agent_names=[a,b] (repeatable; "
        "VALUE is JSON when it parses)",
    )
    parser.add_argument(
        "--gym-version",
        metavar="VERSION|DIR",
        help="judge NeMo-Gym rows by this Gym: a version (shipped: the pin and 0.7.0), or a Gym "
        "or NeMo-RL checkout to derive it from (default: the Gym of --step's config, an "
        "installed nemo_gym or $NEMO_RL_HOME's, else the pin)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the report as one JSON document on stdout (errors are findings in it)",
    )
    parser.add_argument(
        "--max-errors",
        type=int,
        default=20,
        metavar="N",
        help="errors (and warnings) to print; all are counted, in about the time of good rows",
    )
    parser.add_argument(
        "--allow-hub-id", action="store_true", help="accept a hub id for hf_checkpoint"
    )
    parser.add_argument(
        "-o",
        "--override",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Hydra-style override of --step's config (repeatable)",
    )


def _parse_options(items: list[str]) -> dict:
    import json

    from catalog.errors import StepsError

    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise StepsError("E-CLI-OPTION", f"--option {item!r}: expected KEY=VALUE", exit_code=2)
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value.strip("[]").split(",") if value.startswith("[") else value
    return out


def _step_config(step: str, config: str | None, overrides: list[str]) -> dict:
    """The step's compiled, resolved config (what NeMo-RL would see)."""
    from catalog.discovery import discover, resolve
    from runners.config.compiler import compile_config

    entry = resolve(step, discover([]))
    name = config or entry.data.get("run", {}).get("default_config", "default")
    path = Path(name) if name.endswith((".yaml", ".yml")) else entry.config_path(name)
    return compile_config(path, overrides).resolved()


class _LazyBar:
    """A tqdm byte counter made at its first update: tqdm's import then overlaps the scan's
    workers instead of delaying their start."""

    def __init__(self, **kw: Any) -> None:
        self.kw = kw
        self.bar: Any = None

    def update(self, n: int) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(**self.kw)
        self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _progress(path: Path, contract: str):
    """A tqdm byte counter on stderr when it helps (a TTY, or a large input); else None."""
    from catalog.contracts import ROW_CONTRACTS

    if contract not in ROW_CONTRACTS:
        return None, None
    from catalog.contracts.jsonl import resolve_sources

    sources, _ = resolve_sources(path)
    total = 0
    for s in sources:
        with contextlib.suppress(OSError):
            total += s.path.stat().st_size
    if not (sys.stderr.isatty() or total >= PROGRESS_MIN_BYTES):
        return None, None
    bar = _LazyBar(
        total=total,
        unit="B",
        unit_scale=True,
        desc="validate",
        file=sys.stderr,
        mininterval=0.5 if sys.stderr.isatty() else 10,
    )
    return bar.update, bar


def _summary(report) -> str:
    if report.rows is None:
        head = f"{report.type_name} ({report.contract}): {report.path}"
        if report.resolved:
            head += f" -> {report.resolved}"
        if report.note:
            head += f" ({report.note})"
    else:
        files = f"{report.files} file{'s' if report.files != 1 else ''}"
        head = f"{report.type_name} ({report.contract}): {report.rows} rows in {files}"
        if report.bad_rows:
            codes = ", ".join(f"{c}: {n}" for c, n in report.bad_by_code.items())
            head += f", {report.bad_rows} bad rows ({codes})"
    shown = sum(1 for f in report.findings if f.is_error)
    warned = len(report.findings) - shown
    if warned < report.warnings:
        head += f" ({report.warnings} warnings, first {warned} shown)"
    elif report.warnings:
        head += f" ({report.warnings} warning{'s' if report.warnings != 1 else ''})"
    if report.errors == 0:
        return f"{head}. OK"
    more = f", first {shown} shown" if shown < report.errors else ""
    return f"{head}. {report.errors} error{'s' if report.errors != 1 else ''}{more}"


def _require_input(path: Path, contract: str, allow_hub_id: bool) -> None:
    """A missing or unreadable input is a setup error (exit 2), not a finding in the data. A
    FIFO or device is not opened here: the scan is its one reader."""
    import errno
    import os

    from catalog.contracts.input_access import denied
    from catalog.errors import StepsError

    try:
        os.lstat(path)
    except OSError as exc:
        if exc.errno == errno.EACCES:
            raise denied(path) from None
        if allow_hub_id and contract == "hf_checkpoint":
            return  # a hub id: the contract decides
        raise StepsError(
            "E-INPUT-NOT-FOUND",
            "the input does not exist",
            path=str(path),
            fix="check the path"
            + (" (or pass --allow-hub-id)" if contract == "hf_checkpoint" else ""),
            exit_code=2,
        ) from None
    try:
        _require_readable(path, contract)
    except PermissionError as exc:  # a folder on the way that this user may not search
        raise denied(Path(exc.filename or path)) from None


def _require_readable(path: Path, contract: str) -> None:
    """Each file the input stands for can be opened (regular files only: see above)."""
    import os
    import stat

    from catalog.contracts import ROW_CONTRACTS
    from catalog.contracts.input_access import denied, folder_problem
    from catalog.errors import StepsError

    if path.is_dir() and folder_problem(path):
        raise denied(path, path)
    files = [path]
    if contract in ROW_CONTRACTS and path.is_dir():
        from catalog.contracts.jsonl import resolve_sources

        files = [s.path for s in resolve_sources(path)[0]]
    for f in files:
        try:
            if f.is_dir():
                with os.scandir(f):
                    pass
            elif stat.S_ISREG(os.stat(f).st_mode):
                with open(f, "rb"):
                    pass
        except OSError as exc:
            raise StepsError(
                "E-INPUT-UNREADABLE",
                f"cannot read the input ({exc.strerror})",
                path=str(f),
                fix="check the path and its permissions",
                exit_code=2,
            ) from None


def _step_options(args, type_name: str, contract: str) -> tuple[str, str, dict, list]:
    """The type, contract and options --step's config judges the rows by: the same function
    as the dry run's (catalog.contracts.options.step_contract), with --gym-version DIR as the
    Gym tree the run would use; and the notes the dry run gives once (gym_agents_defined)."""
    from catalog.contracts.options import step_contract

    cfg = _step_config(args.step, args.config, args.overrides)
    tree = Path(args.gym_version).expanduser() if args.gym_version else None
    gym_root = tree if tree is not None and tree.is_dir() else None
    type_name, contract, options = step_contract(type_name, contract, cfg, gym_root=gym_root)
    notes = _gym_notes(cfg, gym_root) if contract == "nemo_gym_rows" else []
    return type_name, contract, options, notes


def _gym_notes(cfg: dict, gym_root: Path | None) -> list:
    """What the Gym row check cannot know, said once (as the dry run's gym_agents_defined)."""
    from catalog.contracts.gym_routes import UNDERIVED, UNDERIVED_FIX, underived_message
    from catalog.contracts.options import gym_routes_for
    from catalog.errors import WARNING, Finding

    routes = gym_routes_for(cfg, gym_root)
    underived = routes.underived() if routes is not None else {}
    if not underived:
        return []
    message = underived_message(underived)
    key = "env.nemo_gym.config_paths"
    return [Finding(UNDERIVED, message, None, fix=UNDERIVED_FIX, severity=WARNING, key=key)]


def run(args) -> int:
    from catalog.contracts import validate_artifact
    from catalog.contracts.validation import resolve_contract

    path = Path(args.path)
    type_name = args.type
    contract = resolve_contract(args.type)
    options: dict = {}
    notes: list = []
    if args.step:
        type_name, contract, options, notes = _step_options(args, type_name, contract)
    options.update(_parse_options(args.option))
    _require_input(path, contract, args.allow_hub_id)
    if args.gym_version or contract == "nemo_gym_rows":
        from catalog.contracts.gym_facts import detect_gym

        options["gym_version"] = args.gym_version or options.get("gym_version") or detect_gym()
    update, bar = (None, None) if args.json else _progress(path, contract)
    try:
        report = validate_artifact(
            type_name,
            path,
            options=options,
            max_errors=max(0, args.max_errors),
            progress=update,
            allow_hub_id=args.allow_hub_id,
        )
    finally:
        if bar is not None:
            bar.close()
    report.findings[:0] = notes
    report.warnings += len(notes)
    if args.json:
        from steps.cli.output import emit_json

        emit_json(report.to_dict())
    else:
        from steps.cli.common import print_findings

        print_findings(report.findings)
        print(_summary(report))
    return 0 if report.ok else 1
