"""`run`: compile a step's config, bind its artifacts, preflight, then launch it here (exec into
NeMo-RL, rl_prep in-process) or on a cluster (`--run`/`--batch PROFILE` from env.toml)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from steps.cli.common import add_catalog_arguments, add_run_arguments

HELP = "compile, check and launch a step (NeMo-RL, data prep or conversion)"
EPILOG = """examples:
  python -m steps run rl/nemo_rl/dpo -c tiny --dry-run
  python -m steps run rlvr -c nemo_gym_tiny --input train=out/rl_prep/tiny --nemo-rl ~/RL
  python -m steps run rlvr -c default cluster.num_nodes=2 --batch my_cluster
"""


def add_arguments(parser: argparse.ArgumentParser, with_step: bool = True) -> None:
    """`run`'s arguments (a step folder's `step.py` takes them without the step id); options may
    come before, between or after the overrides (one intermixed parse)."""
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.intermixed = True  # steps.cli's Parser: one parse, options anywhere
    if with_step:
        parser.add_argument("step", help="step id or unique tail (e.g. rl/nemo_rl/dpo, dpo)")
    parser.add_argument(
        "-c",
        "--config",
        metavar="NAME|PATH",
        help="config name in the step's config/ folder, or a YAML path "
        "(default: [run].default_config)",
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="bind an artifact port (consumes or produces) to a path; "
        "an rl_prep output folder or manifest.json binds train and val",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="check everything, write and launch nothing"
    )
    parser.add_argument(
        "--keep", action="store_true", help="with --dry-run: write the run dir it would hand over"
    )
    parser.add_argument(
        "--show-config", action="store_true", help="also print the resolved config (redacted)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--nemo-rl", metavar="DIR", help="NeMo-RL checkout (else $NEMO_RL_HOME, else /opt/nemo-rl)"
    )
    parser.add_argument(
        "--launcher",
        metavar="CMD",
        help="what starts NeMo-RL's script, e.g. 'uv run python' or /path/to/venv/bin/python "
        "(else a profile's `launcher`; locally: `uv run python` with uv.lock and uv, else this "
        "Python); checked before launch",
    )
    add_run_arguments(parser, ref=False)
    add_catalog_arguments(parser)
    parser.add_argument(
        "--force", action="store_true", help="redo work whose output already exists"
    )
    parser.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="data prep: read only the first N rows of each dataset (the same as sample=N)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--run", metavar="PROFILE", help="submit with env.toml PROFILE and follow until it ends"
    )
    where.add_argument(
        "--batch", metavar="PROFILE", help="submit with env.toml PROFILE and return at once"
    )
    parser.add_argument(
        "--no-upstream-judge",
        action="store_true",
        help="with --batch/--run: submit no CPU job of NeMo-RL's own checks in the container "
        "before the GPU job (see docs/cluster.md)",
    )
    parser.add_argument(
        "--until-done",
        action="store_true",
        help="with --batch SLURM_PROFILE or --run RAY_PROFILE: train to the end across "
        "segments (see docs/chains.md)",
    )
    parser.add_argument(
        "--max-segments",
        type=int,
        metavar="N",
        help="with --until-done: stop after N segments (default 20)",
    )
    parser.add_argument(
        "--gpu-hours",
        type=float,
        metavar="H",
        help="with --until-done: stop once the segments used H GPU-hours",
    )
    parser.add_argument(
        "--env-file",
        metavar="PATH",
        help="env.toml with the profiles (else $STEPS_ENV_FILE, else ./env.toml or a parent's, "
        "else ~/.config/steps/env.toml)",
    )

    parser.add_argument("overrides", nargs="*", help="Hydra-style overrides: key=v, +key=v, ~key")


def parse(argv: list[str], with_step: bool) -> argparse.Namespace:
    from steps.cli import _parser_class

    parser = _parser_class()(prog="python -m steps run" if with_step else "step.py")
    add_arguments(parser, with_step)
    return parser.parse_args(argv)


def request_of(args: argparse.Namespace):
    from runners.run import RunRequest

    return RunRequest(
        step=getattr(args, "step", None),
        config=args.config,
        overrides=[  # `--sample N` is `sample=N`, after the typed ones so the flag wins
            *args.overrides,
            *([f"sample={args.sample}"] if args.sample is not None else []),
        ],
        input=list(args.input),
        nemo_rl=args.nemo_rl,
        runs_dir=args.runs_dir,
        catalog=list(args.catalog),
        force=args.force,
        launcher=args.launcher,
        chain=_chain_options(args),
        upstream_judge=not getattr(args, "no_upstream_judge", False),
    )


def _chain_options(args: argparse.Namespace):
    """--until-done's options (None without it); the flags that need it are usage errors."""
    from catalog.errors import StepsError

    until = getattr(args, "until_done", False)
    segs, hours = getattr(args, "max_segments", None), getattr(args, "gpu_hours", None)
    problem = None
    if not until and (segs is not None or hours is not None):
        problem = "--max-segments and --gpu-hours go with --until-done"
    elif until and not (getattr(args, "batch", None) or getattr(args, "run", None)):
        problem = (
            "--until-done goes with --batch SLURM_PROFILE (the chain runs without this process) "
            "or --run RAY_PROFILE (this process drives the chain)"
        )
    elif until and ((segs is not None and segs < 1) or (hours is not None and hours <= 0)):
        problem = "--max-segments must be >= 1 and --gpu-hours > 0"
    if problem:
        raise StepsError("E-USAGE", problem, fix="see `python -m steps run --help`", exit_code=2)
    if not until:
        return None
    from runners.chain.settings import ChainOptions

    return ChainOptions(max_segments=segs or ChainOptions.max_segments, gpu_hours=hours)


def run(
    args: argparse.Namespace, step_dir: Path | None = None, argv: list[str] | None = None
) -> int:
    """Plan, print, then write and launch unless `--dry-run`; exit 0/1/2 or the job's code."""
    from runners.run.cluster import target_for
    from runners.run.execute import execute, plan_for
    from steps.cli.run_render import render_event

    if step_dir is None:  # run.json records the command line as given
        argv = ["python", "-m", "steps", *args._argv]
    req = request_of(args)
    env = dict(os.environ)
    profile = args.run or args.batch
    where = target_for(req, profile, args.env_file, env, Path.cwd(), attached=bool(args.run))
    if profile:
        print(f"profile [{profile}] from {where.env_file}", file=sys.stderr)
    plan = plan_for(req, where, env, step_dir, argv)
    out = sys.stderr if args.json else sys.stdout  # a followed job's log
    code = 0
    for event in execute(plan, where.target, dry_run=args.dry_run, keep=args.keep,
                         force=args.force, out=out):  # fmt: skip
        code = render_event(event, as_json=args.json, show_config=args.show_config)
    return code


def main_for_step(step_dir: Path, argv: list[str]) -> int:
    """Entry point of a step folder's `step.py`: the `run` flags without the step id."""
    from catalog.errors import StepsError
    from steps.cli import UsageError, _fail, _interrupted, _usage_finding

    try:
        return run(parse(list(argv), with_step=False), step_dir=Path(step_dir), argv=list(argv))
    except UsageError as exc:
        return _fail(_usage_finding(exc), 2, None, False, 0, exc.parser)
    except StepsError as exc:
        return _fail(exc.finding, exc.exit_code, None, False, 0)
    except KeyboardInterrupt:
        return _interrupted(None, False, 0)
