"""`explain CODE`: what a finding's code means, its usual fix, the rule that raises it, the
upstream facts behind it and what each step says of it (catalog/codes.toml)."""

from __future__ import annotations

from steps.cli.common import add_catalog_arguments, add_json_argument
from steps.cli.output import wrap

HELP = "explain a finding's code (E-... / W-...): meaning, usual fix, rule, upstream facts"


def add_arguments(parser) -> None:
    parser.add_argument("code", help="a code such as E-BATCH-DIVISIBILITY (any case)")
    add_json_argument(parser, "the registry entry")
    add_catalog_arguments(parser)


def _steps_listing(code: str, catalog) -> list[dict]:
    """Each step that can meet the code, with what its manifest says of it."""
    from catalog.discovery import discover
    from catalog.step_codes import step_codes

    out = []
    for e in discover(catalog, strict=False):
        errors = e.data.get("errors")
        items = errors.items() if isinstance(errors, dict) else []
        if isinstance(errors, list):
            items = [(x.get("name"), x) for x in errors if isinstance(x, dict)]
        notes = {name: note for name, note in items}
        runner = str((e.data.get("run") or {}).get("runner", ""))
        if code in step_codes(runner, [str(n) for n in notes]):
            own = {k: v for k, v in (notes.get(code) or {}).items() if k != "name"}
            out.append({"step": e.id, **own})
    return out


def _versions(rule: str | None) -> str | None:
    if rule is None:
        return None
    from runners.preflight import load_rules

    spec = load_rules().get(rule)
    return spec.versions if spec is not None else "all"


def run(args) -> int:
    from catalog.codes import UPSTREAM_AT, registry
    from catalog.errors import StepsError

    code = args.code.strip().upper()
    reg = registry()
    entry = reg.get(code)
    if entry is None:
        from catalog.did_you_mean import did_you_mean

        raise StepsError(
            "E-CODE-UNKNOWN",
            f"no code {args.code!r} in the registry of codes",
            fix=did_you_mean(code, reg.entries, otherwise="docs/codes.md lists every code"),
            exit_code=2,
        )
    steps = _steps_listing(code, args.catalog)
    versions = _versions(entry.check)
    if args.json:
        from steps.cli.output import document, emit_json

        extra = {"versions": versions} if versions else {}
        emit_json(document(code={**entry.to_dict(), **extra, "steps": steps}))
        return 0
    print(f"{entry.code}  {entry.severity}  ({entry.area})")
    print(wrap(entry.meaning, "  "))
    print(wrap(f"fix: {entry.fix}", "    ", "  "))
    if entry.check:
        print(wrap(f"raised by preflight rule {entry.check} (NeMo-RL versions: {versions})", "  "))
    if entry.when:
        print(wrap(f"NeMo-RL itself would fail: {entry.when}", "  "))
    for fact in entry.upstream:
        print(wrap(f"upstream: {fact}", "    ", "  "))
    if entry.upstream:
        print(wrap(f"({UPSTREAM_AT})", "    ", "  "))
    if entry.documentation_only:
        print(wrap(f"raised by nothing in the source; kept: {entry.documentation_only}", "  "))
    for s in steps:
        said = "; ".join(f"{k}: {v}" for k, v in s.items() if k != "step")
        print(wrap(f"step {s['step']}{': ' + said if said else ''}", "    ", "  "))
    return 0
