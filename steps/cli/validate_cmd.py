"""`validate TYPE PATH`: check a real artifact against its type's contract before any GPU starts."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

from steps.cli.common import add_json_argument

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
    add_json_argument(parser, "the report")
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
    parser.intermixed = True  # steps.cli's Parser: options before or after the overrides
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="KEY=VALUE",
        help="Hydra-style overrides of --step's config, as `run` takes them",
    )
    parser.add_argument(
        "--override",
        dest="more_overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the same, one per flag (repeatable)",
    )
    parser.add_argument(
        "--nemo-rl",
        metavar="DIR",
        help="the NeMo-RL checkout, as `run` takes it: its Gym submodule judges NeMo-Gym rows "
        "(the same as --gym-version DIR)",
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


class _LazyBar:
    """A tqdm byte counter made at its first update: tqdm's import overlaps the scan's start."""

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


def run(args) -> int:
    """Judge the artifact (runners.validate decides by what), print the report: 0 ok, 1 not."""
    from runners.validate import judge, prepare

    path = Path(args.path)
    judging = prepare(
        args.type,
        path,
        step=args.step,
        config=args.config,
        overrides=[*args.overrides, *args.more_overrides],
        options=_parse_options(args.option),
        gym_version=args.gym_version or args.nemo_rl,
        allow_hub_id=args.allow_hub_id,
    )
    update, bar = (None, None) if args.json else _progress(path, judging.contract)
    try:
        report = judge(judging, path, args.max_errors, args.allow_hub_id, progress=update)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        from steps.cli.output import emit_json

        emit_json(report.to_dict())
    else:
        from steps.cli.common import print_findings

        print_findings(report.findings)
        print(_summary(report))
    return 0 if report.ok else 1
