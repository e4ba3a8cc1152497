"""`show ID`: everything in a step's manifest plus its config files."""

from __future__ import annotations

from catalog.discovery import StepEntry, discover, resolve
from steps.cli.common import add_catalog_arguments, add_json_argument
from steps.cli.output import wrap

HELP = "show one step: manifest, configs, errors, references"


def add_arguments(parser) -> None:
    parser.add_argument("step", help="step id or a unique tail of it (e.g. rlvr)")
    add_json_argument(parser)
    add_catalog_arguments(parser)


def as_dict(e: StepEntry) -> dict:
    return {
        "id": e.id,
        "path": str(e.dir),
        "manifest": str(e.manifest_path),
        "configs": {name: str(e.config_path(name)) for name in e.config_names()},
        **e.data,
    }


def _ports(title: str, ports: list[dict]) -> None:
    if not ports:
        return
    print(f"\n{title}:")
    for p in ports:
        req = "" if p.get("required", True) else " (optional)"
        keys = ", ".join(p.get("config_keys", []))
        narrowed = f" (subtype from {p['type_key']})" if p.get("type_key") else ""
        print(wrap(f"{p.get('name')}: {p.get('type')}{narrowed}{req} <- {keys}", "      ", "  "))
        print(wrap(p.get("description", ""), "      "))


def run(args) -> int:
    e = resolve(args.step, discover(args.catalog))
    if args.json:
        from steps.cli.output import document, emit_json

        emit_json(document(step=as_dict(e)))
        return 0
    meta, run_spec = e.meta, e.data.get("run", {})
    print(wrap(f"{e.id}  v{meta.get('version', '?')}  {meta.get('name', '')}", "  ", ""))
    print(wrap(meta.get("description", ""), "  "))
    print(wrap(f"tags: {', '.join(meta.get('tags', []))}", "    ", "  "))
    print(wrap(f"folder: {e.dir}", "    ", "  "))
    runner = [f"runner: {run_spec.get('runner', '?')}"]
    keys = ("algorithm", "script", "gym_script")
    runner += [f"{k}: {run_spec[k]}" for k in keys if run_spec.get(k)]
    print(wrap(", ".join(runner), "    ", "  "))
    _ports("consumes", e.consumes)
    _ports("produces", e.produces)
    print("\nconfigs:")
    for name in e.config_names():
        mark = " (default)" if name == run_spec.get("default_config", "default") else ""
        print(wrap(f"{name}{mark}: {e.config_path(name)}", "      ", "  "))
    if e.data.get("parameters"):
        print("\nparameters:")
        for p in e.data["parameters"]:
            print(wrap(f"{p.get('name')} = {p.get('default')!r}", "      ", "  "))
            print(wrap(p.get("description", ""), "      "))
    if e.data.get("strategies"):
        print("\nstrategies:")
        for s in e.data["strategies"]:
            print(wrap(f"when {s.get('when')}", "       ", "  "))
            print(wrap(f"then {s.get('then')}", "         ", "    "))
    errors = e.data.get("errors") or {}
    items = errors.items() if isinstance(errors, dict) else [(x.get("name"), x) for x in errors]
    notes = [(str(code), err) for code, err in items if err]
    runner = str(run_spec.get("runner", ""))
    from catalog.step_codes import step_codes

    plain = [c for c in step_codes(runner, [str(c) for c, _ in items]) if c not in dict(notes)]
    if notes or plain:
        print("\nerrors:")
        print(wrap("(`python -m steps explain CODE`: each one's meaning and fix)", "    ", "  "))
        for code, err in notes:
            check = f" [checked by {err['check']}]" if err.get("check") else ""
            said = f": {err['description']}" if err.get("description") else ""
            print(wrap(f"{code}{check}{said}", "      ", "  "))
            if err.get("recovery"):
                print(wrap(f"recovery: {err['recovery']}", "      ", "    "))
        if plain:
            print(wrap(", ".join(plain), "    ", "  "))
    ref = e.data.get("reference", {})
    if ref:
        print("\nreference:")
        for k, vals in ref.items():
            for v in vals:
                print(wrap(f"{k}: {v}", "      ", "  "))
    return 0
