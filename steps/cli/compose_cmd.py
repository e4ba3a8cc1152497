"""`compose --from TYPES --to TYPE`: the shortest chain of catalog steps, as a pipeline file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from steps.cli.common import add_catalog_arguments, add_json_argument

HELP = "find the shortest chain of steps from some artifact types to one, write a pipeline"

EPILOG = """examples:
  python -m steps compose --from data_blend --to hf_checkpoint -o my_pipe.yaml
  python -m steps compose --from data_blend --to hf_checkpoint --through dpo --config tiny
  python -m steps compose --from nemo_gym_jsonl,hf_checkpoint --to nemo_rl_checkpoint

An input the chain needs and --from does not give (the policy to train) is added with path ???;
the command lists every ??? to fill. Types: `python -m steps list --types`.
"""


def add_arguments(parser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--from",
        dest="start",
        required=True,
        metavar="TYPE[,TYPE...]",
        help="types you have (e.g. data_blend, or data_blend,hf_checkpoint)",
    )
    parser.add_argument("--to", dest="goal", required=True, metavar="TYPE", help="type you want")
    parser.add_argument(
        "--through", metavar="STEP", help="a step the chain must include (e.g. dpo, rlvr)"
    )
    parser.add_argument(
        "--config", metavar="NAME", help="config name to use in every stage that has it (e.g. tiny)"
    )
    parser.add_argument("--name", help="pipeline name (default: composed-<to>)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    add_json_argument(parser, "the chain and the pipeline (as data and as YAML text)")
    add_catalog_arguments(parser)


def run(args) -> int:
    from catalog.compose import best_chains, pipeline_data, to_fill, write_pipeline
    from catalog.discovery import discover
    from catalog.types import load_catalog_types
    from runners.config.values import read_config

    start = [t.strip() for t in args.start.split(",") if t.strip()]
    graph = load_catalog_types(args.catalog)
    entries = discover(args.catalog)
    best, *alike = best_chains(
        entries, graph, start, args.goal, args.through, read_config=read_config
    )
    name = args.name or f"composed-{args.goal}".replace("_", "-")
    data = pipeline_data(list(best.actions), graph, start, args.goal, name, args.config)
    fill = to_fill(data)
    out = Path(args.output) if args.output else None
    try:
        text = write_pipeline(data, out, fill)
    except OSError as exc:
        from catalog.errors import StepsError

        raise StepsError(
            "E-OUTPUT-WRITE",
            f"cannot write the pipeline file: {exc.strerror or exc}",
            path=str(out),
            fix="pass -o a file in a folder you can write",
            exit_code=2,
        ) from None
    others = [_other(best.steps, c.steps) for c in alike]
    if args.json:
        from steps.cli.output import document, emit_json

        emit_json(
            document(
                chain=best.steps,
                pipeline=data,
                output=out,
                text=text,
                to_fill=fill,
                alternatives=[c.steps for c in alike],
            )
        )
        return 0
    if out is None:
        sys.stdout.write(text)
    where = f"wrote {out}" if out is not None else "composed"
    lines = [f"{where}: {' -> '.join(best.steps)}"]
    if fill:
        lines += ["fill in before `pipeline run`:", *(f"  {f}" for f in fill)]
    if others:
        lines += ["as short (pick one with --through):", *(f"  {o}" for o in others)]
    lines.append(f"next: python -m steps plan {out if out is not None else 'FILE'}")
    print("\n".join(lines), file=sys.stderr)
    return 0


def _other(best: list[str], steps: list[str]) -> str:
    """An equally good chain, with the --through that picks it."""
    step = next((s for s in steps if s not in best), steps[0])
    return f"{' -> '.join(steps)}  (--through {step.rsplit('/', 1)[-1]})"
