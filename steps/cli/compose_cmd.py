"""`compose --from TYPES --to TYPE`: the shortest chain of catalog steps, as a pipeline file."""

from __future__ import annotations

import sys
from pathlib import Path

from steps.cli.common import add_catalog_arguments, add_json_argument

HELP = "find the shortest chain of steps from some artifact types to one, write a pipeline"


def add_arguments(parser) -> None:
    parser.add_argument(
        "--from",
        dest="start",
        required=True,
        metavar="TYPE[,TYPE...]",
        help="types you have (e.g. data_blend,hf_checkpoint)",
    )
    parser.add_argument("--to", dest="goal", required=True, metavar="TYPE", help="type you want")
    parser.add_argument("--through", metavar="STEP", help="a step the chain must include")
    parser.add_argument(
        "--config", metavar="NAME", help="config name to use in every stage that has it (e.g. tiny)"
    )
    parser.add_argument("--name", help="pipeline name (default: composed-<to>)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    add_json_argument(parser, "the chain and the pipeline (as data and as YAML text)")
    add_catalog_arguments(parser)


def run(args) -> int:
    from catalog.compose import pipeline_data, shortest_chain, write_pipeline
    from catalog.discovery import discover
    from catalog.types import load_catalog_types
    from runners.config.values import read_config

    start = [t.strip() for t in args.start.split(",") if t.strip()]
    graph = load_catalog_types(args.catalog)
    entries = discover(args.catalog)
    chain = shortest_chain(entries, graph, start, args.goal, args.through, read_config=read_config)
    name = args.name or f"composed-{args.goal}".replace("_", "-")
    data = pipeline_data(chain, graph, start, args.goal, name, args.config)
    out = Path(args.output) if args.output else None
    try:
        text = write_pipeline(data, out)
    except OSError as exc:
        from catalog.errors import StepsError

        raise StepsError(
            "E-OUTPUT-WRITE",
            f"cannot write the pipeline file: {exc.strerror or exc}",
            path=str(out),
            fix="pass -o a file in a folder you can write",
            exit_code=2,
        ) from None
    steps = [a.step for a in chain]
    if args.json:
        from steps.cli.output import document, emit_json

        emit_json(document(chain=steps, pipeline=data, output=out, text=text))
    elif out is None:
        sys.stdout.write(text)
    else:
        print(f"wrote {out}: {' -> '.join(steps)}", file=sys.stderr)
    return 0
