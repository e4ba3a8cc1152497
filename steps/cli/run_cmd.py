"""`run`: compile a step's config, bind its artifacts, preflight, write the run dir, launch."""

from __future__ import annotations

import argparse

HELP = "compile, check and launch a step (NeMo-RL, data prep or conversion)"


def add_arguments(parser) -> None:
    from runners.run import add_options

    parser.add_argument("step", help="step id or unique tail (e.g. rl/nemo_rl/dpo, dpo)")
    add_options(parser)
    parser.add_argument(
        "overrides",
        nargs=argparse.REMAINDER,
        help="Hydra-style overrides: key=v, +key=v, ++key=v, ~key",
    )


def run(args) -> int:
    from runners.run import parse
    from runners.run import run as run_step

    # Options after the first override land in the remainder: parse it again, step included.
    args = parse([args.step, *_options(args), *args.overrides], with_step=True)
    return run_step(args, argv=None)


def _options(args) -> list[str]:
    """The options argparse already took (before the first override), as tokens again."""
    out: list[str] = []
    for flag, value in (
        ("--config", args.config),
        ("--nemo-rl", args.nemo_rl),
        ("--runs-dir", args.runs_dir),
    ):
        if value is not None:
            out.append(f"{flag}={value}")
    out += [f"--input={v}" for v in args.input] + [f"--catalog={v}" for v in args.catalog]
    out += [
        f
        for f, on in (("--dry-run", args.dry_run), ("--json", args.json), ("--force", args.force))
        if on
    ]
    return out
