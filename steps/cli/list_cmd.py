"""`list`: the steps in the catalog, filtered by category or by artifact type (following is_a);
`list --types`: the artifact types (what `validate TYPE` and the ports name)."""

from __future__ import annotations

from catalog.discovery import StepEntry, discover
from steps.cli.common import add_catalog_arguments, add_json_argument

HELP = "list the steps in the catalog (or, with --types, the artifact types)"


def add_arguments(parser) -> None:
    parser.add_argument("--category", help="only steps of this category (first folder)")
    parser.add_argument("--consumes", metavar="TYPE", help="only steps that consume this type")
    parser.add_argument("--produces", metavar="TYPE", help="only steps that produce this type")
    parser.add_argument(
        "--types", action="store_true", help="list the artifact types instead of the steps"
    )
    add_json_argument(parser)
    add_catalog_arguments(parser)


def _matches(ports: list[dict], wanted: str, graph) -> bool:
    """A port matches when either type is_a the other (a consumer of X accepts any X); a port's
    `type_map` subtypes count (a DPO run on Megatron produces a megatron_checkpoint)."""
    return any(
        graph.is_a(wanted, t) or graph.is_a(t, wanted)
        for p in ports
        for t in [p.get("type", ""), *(p.get("type_map") or {}).values()]
    )


def select(
    entries: list[StepEntry],
    category: str | None = None,
    consumes: str | None = None,
    produces: str | None = None,
    extra_roots: list[str] = (),
) -> list[StepEntry]:
    out = [e for e in entries if category is None or e.category == category]
    if consumes or produces:
        from catalog.types import load_catalog_types, require_type

        graph = load_catalog_types(extra_roots)
        for t in (consumes, produces):
            if t:
                require_type(graph, t)
        if consumes:
            out = [e for e in out if _matches(e.consumes, consumes, graph)]
        if produces:
            out = [e for e in out if _matches(e.produces, produces, graph)]
    return out


def _port(p: dict, with_required: bool) -> dict:
    out = {"name": p.get("name"), "type": p.get("type")}
    if with_required:
        out["required"] = bool(p.get("required", True))  # the manifest's default
    return out


def as_dict(e: StepEntry) -> dict:
    meta = e.meta
    return {
        "id": e.id,
        "name": meta.get("name", ""),
        "category": e.category,
        "version": meta.get("version", ""),
        "description": meta.get("description", ""),
        "tags": meta.get("tags", []),
        "path": str(e.dir),
        "consumes": [_port(p, True) for p in e.consumes],
        "produces": [_port(p, False) for p in e.produces],
    }


def run(args) -> int:
    if args.types:
        return _types(args)
    entries = select(
        discover(args.catalog), args.category, args.consumes, args.produces, args.catalog
    )
    if args.json:
        from steps.cli.output import document, emit_json

        emit_json(document(steps=[as_dict(e) for e in entries]))
        return 0
    if not entries:
        print("no steps match")
        return 0
    from steps.cli.output import wrap

    width = max(len(e.id) for e in entries)
    pad = " " * (width + 2)
    for e in entries:
        ins = ",".join(dict.fromkeys(str(p.get("type", "?")) for p in e.consumes)) or "-"
        outs = ",".join(dict.fromkeys(str(p.get("type", "?")) for p in e.produces)) or "-"
        print(wrap(f"{ins} -> {outs}", pad, first=f"{e.id:<{width}}  "))
        desc = e.meta.get("description", "")
        if desc:
            print(wrap(desc, pad))
    return 0


def _types(args) -> int:
    """Every artifact type: contract, layout, parents and meaning."""
    if args.category or args.consumes or args.produces:
        from catalog.errors import StepsError

        raise StepsError(
            "E-USAGE",
            "--types lists every type: it takes no --category, --consumes or --produces",
            fix="drop the filters, or drop --types to list steps",
            exit_code=2,
        )
    from catalog.types import load_catalog_types

    graph = load_catalog_types(args.catalog)
    types = [
        {
            "name": name,
            "is_a": list(t.is_a),
            "layout": t.layout,
            "contract": t.contract,
            "description": " ".join(t.description.split()),
            "converts_to": [{"type": c.target, "via": c.via} for c in t.convert_to],
        }
        for name, t in sorted(graph.types.items())
    ]
    code = 2 if any(f.is_error for f in graph.findings) else 0  # a broken types.toml: setup
    if args.json:
        from steps.cli.output import document, emit_json

        emit_json(document(graph.findings, types=types))
        return code
    from steps.cli.common import print_findings
    from steps.cli.output import wrap

    print_findings(graph.findings)
    width = max((len(t["name"]) for t in types), default=0)
    pad = " " * (width + 2)
    for t in types:
        parents = f", is_a {', '.join(t['is_a'])}" if t["is_a"] else ""
        head = f"{t['name']:<{width}}  "
        print(wrap(f"contract {t['contract']}, layout {t['layout']}{parents}", pad, first=head))
        if t["description"]:
            print(wrap(t["description"], pad))
    return code
