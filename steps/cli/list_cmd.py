"""`list`: the steps in the catalog, filtered by category or by artifact type (following is_a)."""

from __future__ import annotations

from catalog.discovery import StepEntry, discover
from steps.cli.common import add_catalog_arguments, print_json

HELP = "list the steps in the catalog"


def add_arguments(parser) -> None:
    parser.add_argument("--category", help="only steps of this category (first folder)")
    parser.add_argument("--consumes", metavar="TYPE", help="only steps that consume this type")
    parser.add_argument("--produces", metavar="TYPE", help="only steps that produce this type")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_catalog_arguments(parser)


def _matches(ports: list[dict], wanted: str, graph) -> bool:
    """A port matches when either type is_a the other (a consumer of X accepts any X)."""
    return any(
        graph.is_a(wanted, p.get("type", "")) or graph.is_a(p.get("type", ""), wanted)
        for p in ports
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
        "consumes": [{k: p.get(k) for k in ("name", "type", "required")} for p in e.consumes],
        "produces": [{k: p.get(k) for k in ("name", "type")} for p in e.produces],
    }


def run(args) -> int:
    entries = select(
        discover(args.catalog), args.category, args.consumes, args.produces, args.catalog
    )
    if args.json:
        print_json([as_dict(e) for e in entries])
        return 0
    if not entries:
        print("no steps match")
        return 0
    width = max(len(e.id) for e in entries)
    for e in entries:
        ins = ",".join(dict.fromkeys(str(p.get("type", "?")) for p in e.consumes)) or "-"
        outs = ",".join(dict.fromkeys(str(p.get("type", "?")) for p in e.produces)) or "-"
        print(f"{e.id:<{width}}  {ins} -> {outs}")
        desc = e.meta.get("description", "")
        if desc:
            print(f"{'':<{width}}  {desc}")
    return 0
