"""Generate catalog/schema/nemo_rl/<algorithm>.json from a NeMo-RL checkout, without importing it.

NeMo-RL's config schema is its `MasterConfig` pydantic models and the TypedDicts they nest.
Importing them pulls in torch, ray and transformers, so this script reads the source with `ast`,
follows `from nemo_rl... import` statements, and writes a simplified type description that
`runners.preflight.schema` checks compiled configs against. A version bump is one command:

    .venv/bin/python tools/gen_nemo_rl_schema.py --nemo-rl /path/to/RL

(the checkout at the new pin; the commit is read with `git rev-parse HEAD`, or pass --commit).

The TypedDicts are not the whole truth: NeMo-RL also reads keys they never declare
(`cfg.get("use_deep_gemm")`, `config["megatron_cfg"]["moe_router_dtype"]`). So a key is also
known when upstream ships it: every YAML under `examples/` whose resolved config (after its
`defaults:` chain) has a top-level section named for the algorithm (`grpo:`, `dpo:`) is walked
along the schema, and each key the schema does not declare at that dotted path is recorded under
`"shipped"` as `{parent path: {key: "examples/...yaml:line"}}` (list items as `[]`), the first
file in path order naming it. Shipped keys are recorded by path, not by class, because that is
what the YAML proves; their type is unknown (not the YAML value's: examples write null
placeholders and ints where floats are meant, so typing from them would invent errors), and
nothing below them is checked. Scanning `.get("key")` calls in the source instead was rejected as
the primary mechanism: a read cannot be tied to a config path without following data flow.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "catalog" / "schema" / "nemo_rl"
ROOTS = {
    "grpo": ("nemo_rl.algorithms.grpo", "MasterConfig"),
    "dpo": ("nemo_rl.algorithms.dpo", "MasterConfig"),
}
BASIC = {"int": "int", "float": "float", "bool": "bool", "str": "str", "bytes": "str"}
# Names from outside NeMo-RL whose validation is a basic type (pydantic constrained types, os).
EXTERNAL = {
    "PositiveInt": "int",
    "NonNegativeInt": "int",
    "NegativeInt": "int",
    "NonPositiveInt": "int",
    "PositiveFloat": "float",
    "NonNegativeFloat": "float",
    "PathLike": "str",
    "Path": "str",
}
ANY_NAMES = {"Any", "object", "Callable", "type", "Type", "TypeVar"}
LIST_NAMES = {"list", "List", "Sequence", "tuple", "Tuple", "set", "Set", "frozenset", "Iterable"}
DICT_NAMES = {"dict", "Dict", "Mapping", "MutableMapping"}
WRAPPERS = {"NotRequired", "Required", "Annotated", "Final", "ReadOnly"}
EXAMPLES = "examples"  # upstream's shipped configs, recipes and Gym examples live below this
LOADER_KEY = "defaults"  # consumed by NeMo-RL's config loader, never part of MasterConfig


@dataclass
class Module:
    """One parsed source file: its classes, module-level aliases and imported names."""

    name: str
    path: Path
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    aliases: dict[str, ast.expr] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)


class SourceIndex:
    """Parsed NeMo-RL modules, loaded on demand by dotted name."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: dict[str, Module | None] = {}

    def module(self, name: str) -> Module | None:
        if name in self.modules:
            return self.modules[name]
        base = self.root / Path(*name.split("."))
        path = next(
            (p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None
        )
        self.modules[name] = self._parse(name, path) if path else None
        return self.modules[name]

    def _parse(self, name: str, path: Path) -> Module:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        mod = Module(name, path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                mod.classes[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    mod.aliases[target.id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None and _is_name(node.annotation, "TypeAlias"):
                    mod.aliases[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom):
                src = _absolute(node, package)
                for alias in node.names:
                    mod.imports[alias.asname or alias.name] = (src, alias.name)
        return mod

    def all_modules(self) -> list[str]:
        pkg = self.root / "nemo_rl"
        names = []
        for path in sorted(pkg.rglob("*.py")):
            rel = path.relative_to(self.root).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(parts))
        return names


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _is_name(expr: ast.expr, name: str) -> bool:
    return (isinstance(expr, ast.Name) and expr.id == name) or (
        isinstance(expr, ast.Attribute) and expr.attr == name
    )


def _leaf(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


class SchemaBuilder:
    """Turns class definitions into the simplified JSON type description."""

    def __init__(self, index: SourceIndex) -> None:
        self.index = index
        self.classes: dict[str, dict] = {}
        self.keys: dict[tuple[str, str], str] = {}  # (module, class) -> schema key
        self.pending: list[tuple[str, str]] = []

    # -- names ---------------------------------------------------------------------------
    def resolve(self, modname: str, name: str, depth: int = 0) -> tuple[str, str, str] | None:
        """Where a name used in a module is defined: (kind, module, name) or None if external."""
        mod = self.index.module(modname)
        if mod is None or depth > 20:
            return None
        if name in mod.classes:
            return ("class", modname, name)
        if name in mod.aliases:
            return ("alias", modname, name)
        if name in mod.imports:
            src, orig = mod.imports[name]
            if src.startswith("nemo_rl"):
                return self.resolve(src, orig, depth + 1)
        return None

    def class_key(self, modname: str, name: str) -> str:
        if (modname, name) in self.keys:
            return self.keys[(modname, name)]
        key = name if name not in self.keys.values() else f"{modname}.{name}"
        self.keys[(modname, name)] = key
        self.pending.append((modname, name))
        return key

    # -- types ---------------------------------------------------------------------------
    def convert(self, expr: ast.expr | None, modname: str) -> dict:
        """A type annotation as {"t": ...}; NotRequired/Annotated wrappers are peeled."""
        if expr is None:
            return {"t": "any"}
        if isinstance(expr, ast.Constant):
            if expr.value is None:
                return {"t": "none"}
            if isinstance(expr.value, str):  # a forward reference
                try:
                    return self.convert(ast.parse(expr.value, mode="eval").body, modname)
                except SyntaxError:
                    return {"t": "any"}
            return {"t": "any"}
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            return _union([self.convert(expr.left, modname), self.convert(expr.right, modname)])
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr, modname)
        name = _leaf(expr)
        if name is None:
            return {"t": "any"}
        if name in BASIC:
            return {"t": BASIC[name]}
        if name in LIST_NAMES:
            return {"t": "list", "item": {"t": "any"}}
        if name in DICT_NAMES:
            return {"t": "dict", "value": {"t": "any"}}
        if name == "None":
            return {"t": "none"}
        if isinstance(expr, ast.Attribute):  # os.PathLike, typing.Any, ...
            return {"t": EXTERNAL.get(name, "any")}
        where = self.resolve(modname, name)
        if where is None:
            return {"t": EXTERNAL.get(name, "any")}
        kind, mod, real = where
        if kind == "alias":
            return self.convert(self.index.module(mod).aliases[real], mod)  # type: ignore[union-attr]
        return {"t": "ref", "name": self.class_key(mod, real)}

    def _subscript(self, expr: ast.Subscript, modname: str) -> dict:
        head = _leaf(expr.value) or ""
        args = list(expr.slice.elts) if isinstance(expr.slice, ast.Tuple) else [expr.slice]
        if head in WRAPPERS:
            return self.convert(args[0], modname)
        if head == "Optional":
            return _union([self.convert(args[0], modname), {"t": "none"}])
        if head == "Union":
            return _union([self.convert(a, modname) for a in args])
        if head == "Literal":
            values = [a.value for a in args if isinstance(a, ast.Constant)]
            return {"t": "literal", "values": values}
        if head in LIST_NAMES:
            item = self.convert(args[0], modname) if args else {"t": "any"}
            if head in {"tuple", "Tuple"} and len(args) != 1:
                item = {"t": "any"}
            return {"t": "list", "item": item}
        if head in DICT_NAMES:
            value = self.convert(args[-1], modname) if len(args) == 2 else {"t": "any"}
            return {"t": "dict", "value": value}
        return self.convert(expr.value, modname)

    # -- classes -------------------------------------------------------------------------
    def build_class(self, modname: str, name: str) -> dict:
        mod = self.index.module(modname)
        assert mod is not None
        node = mod.classes[name]
        kind, fields, variant_of = "class", {}, None
        for base in node.bases:
            bname = _leaf(base)
            if bname == "TypedDict":
                kind = "typeddict"
            elif bname == "BaseModel":
                kind = "model"
            elif bname in {"Enum", "StrEnum", "IntEnum"}:
                kind = "enum"
            elif bname is not None:
                where = self.resolve(modname, bname)
                if where and where[0] == "class":
                    parent = self.classes.get(self.class_key(where[1], where[2]))
                    if parent is None:
                        parent = self.build_class(where[1], where[2])
                    kind = parent["kind"]
                    fields.update(json.loads(json.dumps(parent["fields"])))
                    variant_of = self.keys[(where[1], where[2])]
        total = not any(
            k.arg == "total" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in node.keywords
        )
        extra = next(
            (
                k.value.value
                for k in node.keywords
                if k.arg == "extra" and isinstance(k.value, ast.Constant)
            ),
            None,
        )
        values = []
        for stmt in node.body:
            if kind == "enum" and isinstance(stmt, ast.Assign):
                values.extend([stmt.value.value] if isinstance(stmt.value, ast.Constant) else [])
            if isinstance(stmt, ast.Assign) and _is_config_dict(stmt):
                extra = _config_dict_extra(stmt.value) or extra
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            fname = stmt.target.id
            if _leaf(stmt.annotation) == "ClassVar" or (
                isinstance(stmt.annotation, ast.Subscript)
                and _leaf(stmt.annotation.value) == "ClassVar"
            ):
                continue
            if fname == "model_config":
                continue
            if kind == "model":
                required = _model_field_required(stmt.value)
            else:
                required = total and not _wrapped_in(stmt.annotation, "NotRequired")
                if _wrapped_in(stmt.annotation, "Required"):
                    required = True
            fields[fname] = {
                "type": self.convert(stmt.annotation, modname),
                "required": required,
                "line": stmt.lineno,
            }
        if kind == "enum":
            return {"kind": "enum", "values": values, "source": self._source(mod, node)}
        entry: dict[str, Any] = {"kind": kind, "source": self._source(mod, node), "fields": fields}
        if extra:
            entry["extra"] = extra
        if variant_of:
            entry["subclass_of"] = variant_of
        return entry

    def _source(self, mod: Module, node: ast.ClassDef) -> str:
        return f"{mod.path.relative_to(self.index.root).as_posix()}:{node.lineno}"

    def drain(self) -> None:
        while self.pending:
            modname, name = self.pending.pop(0)
            key = self.keys[(modname, name)]
            if key not in self.classes:
                self.classes[key] = self.build_class(modname, name)

    def add_subclasses(self) -> None:
        """Record classes elsewhere in NeMo-RL that extend an emitted class (e.g. VllmConfig)."""
        known = dict(self.keys)
        for modname in self.index.all_modules():
            mod = self.index.module(modname)
            if mod is None:
                continue
            for cname, node in mod.classes.items():
                for base in node.bases:
                    bname = _leaf(base)
                    where = self.resolve(modname, bname) if bname else None
                    if not where or where[0] != "class" or (where[1], where[2]) not in known:
                        continue
                    if (modname, cname) in known:
                        continue
                    parent = self.classes[known[(where[1], where[2])]]
                    if parent["kind"] not in {"typeddict", "model"}:
                        continue
                    sub = self.class_key(modname, cname)
                    parent.setdefault("subclasses", []).append(sub)
        self.drain()
        for entry in self.classes.values():
            if "subclasses" in entry:
                entry["subclasses"] = sorted(set(entry["subclasses"]))


def _union(options: list[dict]) -> dict:
    flat: list[dict] = []
    for opt in options:
        for o in opt["options"] if opt["t"] == "union" else [opt]:
            if o not in flat:
                flat.append(o)
    if any(o["t"] == "any" for o in flat):
        return {"t": "any"}
    return flat[0] if len(flat) == 1 else {"t": "union", "options": flat}


def _wrapped_in(expr: ast.expr, wrapper: str) -> bool:
    if isinstance(expr, ast.Subscript):
        if _leaf(expr.value) == wrapper:
            return True
        if _leaf(expr.value) == "Annotated":
            inner = expr.slice.elts[0] if isinstance(expr.slice, ast.Tuple) else expr.slice
            return _wrapped_in(inner, wrapper)
    return False


def _model_field_required(value: ast.expr | None) -> bool:
    if value is None:
        return True
    if isinstance(value, ast.Call) and _leaf(value.func) == "Field":
        if any(k.arg in {"default", "default_factory"} for k in value.keywords):
            return False
        if value.args:
            first = value.args[0]
            return isinstance(first, ast.Constant) and first.value is Ellipsis
        return True
    return False


def _is_config_dict(stmt: ast.Assign) -> bool:
    return any(isinstance(t, ast.Name) and t.id == "model_config" for t in stmt.targets)


def _config_dict_extra(value: ast.expr) -> str | None:
    if isinstance(value, ast.Call):
        for k in value.keywords:
            if k.arg == "extra" and isinstance(k.value, ast.Constant):
                return str(k.value.value)
    return None


def git_commit(checkout: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def build(checkout: Path, algorithm: str, commit: str, generated: str) -> dict:
    """The schema document for one algorithm's MasterConfig."""
    index = SourceIndex(checkout)
    builder = SchemaBuilder(index)
    modname, cls = ROOTS[algorithm]
    if index.module(modname) is None or cls not in index.module(modname).classes:  # type: ignore[union-attr]
        raise SystemExit(
            f"error: {checkout}: {modname}.{cls} not found; is this a NeMo-RL checkout?"
        )
    root = builder.class_key(modname, cls)
    builder.drain()
    builder.add_subclasses()
    classes = dict(sorted(builder.classes.items()))
    return {
        "algorithm": algorithm,
        "root": root,
        "upstream": {
            "repo": "NVIDIA-NeMo/RL",
            "commit": commit,
            "generated": generated,
            "generator": "tools/gen_nemo_rl_schema.py",
        },
        "classes": classes,
        "shipped": shipped_keys(checkout, algorithm, classes, root),
    }


class _LineLoader(yaml.SafeLoader):
    """A safe loader whose mappings remember the line of each key."""


class _Lines(dict):
    """A YAML mapping with `lines[key]`, the 1-based line that wrote the key."""

    lines: dict


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Lines:
    out = _Lines(loader.construct_mapping(node, deep=True))  # flattens `<<` merges in place
    out.lines = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        out.lines.setdefault(key, key_node.start_mark.line + 1)
    return out


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_examples(checkout: Path) -> dict[Path, dict]:
    """Every YAML mapping under examples/, by path; unreadable files are skipped with a note."""
    out: dict[Path, dict] = {}
    root = checkout / EXAMPLES
    for path in sorted([*root.rglob("*.yaml"), *root.rglob("*.yml")]):
        try:
            doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_LineLoader)  # a SafeLoader
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            print(f"note: skipped {path.relative_to(checkout)}: {exc}", file=sys.stderr)
            continue
        if isinstance(doc, dict):
            out[path.resolve()] = doc
    return out


def sections(path: Path, docs: dict[Path, dict], seen: frozenset[Path] = frozenset()) -> set:
    """Top-level keys of a config after its `defaults:` chain (one file or a list)."""
    doc = docs.get(path)
    if doc is None or path in seen:
        return set()
    keys = set(doc)
    parents = doc.get(LOADER_KEY)
    for parent in [parents] if isinstance(parents, str) else parents or []:
        if isinstance(parent, str):
            keys |= sections((path.parent / parent).resolve(), docs, seen | {path})
    return keys


class ShippedWalker:
    """Walks an example config along the schema, recording keys the schema does not declare."""

    def __init__(self, classes: dict, source: str) -> None:
        self.classes = classes
        self.source = source
        self.found: dict[str, dict[str, str]] = {}

    def known(self, name: str) -> dict:
        """A class's fields and those its subclasses add, as the preflight checker sees them."""
        cls = self.classes[name]
        fields = dict(cls["fields"])
        for sub in cls.get("subclasses", []):
            for fname, spec in self.classes.get(sub, {}).get("fields", {}).items():
                fields.setdefault(fname, spec)
        return fields

    def walk(self, value: Any, t: dict, path: str) -> None:
        options = t["options"] if t["t"] == "union" else [t]
        refs = [
            o["name"]
            for o in options
            if o["t"] == "ref"
            and self.classes.get(o["name"], {}).get("kind") in {"typeddict", "model"}
        ]
        if refs and isinstance(value, dict):  # a key is undeclared only if no branch declares it
            self.walk_class(value, [self.known(name) for name in refs], path)
        for o in options:
            if o["t"] == "list" and isinstance(value, list):
                for item in value:
                    self.walk(item, o["item"], f"{path}[]")
            elif o["t"] == "dict" and isinstance(value, dict) and o["value"]["t"] != "any":
                for k, v in value.items():
                    self.walk(v, o["value"], _join(path, k))

    def walk_class(self, value: dict, branches: list[dict], path: str) -> None:
        for key, v in value.items():
            if not path and key == LOADER_KEY:
                continue
            declared = [fields[key]["type"] for fields in branches if key in fields]
            for t in declared:
                self.walk(v, t, _join(path, key))
            if not declared:
                line = getattr(value, "lines", {}).get(key)
                where = f"{self.source}:{line}" if line else self.source
                self.found.setdefault(path, {}).setdefault(str(key), where)


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def shipped_keys(checkout: Path, algorithm: str, classes: dict, root: str) -> dict:
    """Keys upstream's example configs for this algorithm set that the schema does not declare."""
    docs = load_examples(checkout)
    found: dict[str, dict[str, str]] = {}
    for path, doc in docs.items():
        if algorithm not in sections(path, docs):
            continue
        walker = ShippedWalker(classes, path.relative_to(checkout.resolve()).as_posix())
        walker.walk(doc, {"t": "ref", "name": root}, "")
        for parent, keys in walker.found.items():
            for key, where in keys.items():
                found.setdefault(parent, {}).setdefault(key, where)
    return {parent: dict(sorted(keys.items())) for parent, keys in sorted(found.items())}


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nemo-rl", required=True, type=Path, help="NeMo-RL checkout (the pin)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    ap.add_argument("--commit", help="upstream commit (default: git rev-parse HEAD in --nemo-rl)")
    ap.add_argument("--date", help="generation date (default: today, UTC)")
    args = ap.parse_args(argv)
    checkout = args.nemo_rl.resolve()
    if not (checkout / "nemo_rl").is_dir():
        print(f"error: {checkout}: no nemo_rl/ package; pass a NeMo-RL checkout", file=sys.stderr)
        return 2
    commit = args.commit or git_commit(checkout)
    if not commit:
        print(
            "error: cannot read the commit (not a git checkout); pass --commit SHA", file=sys.stderr
        )
        return 2
    generated = args.date or dt.datetime.now(dt.timezone.utc).date().isoformat()
    for algorithm in ROOTS:
        doc = build(checkout, algorithm, commit, generated)
        out = args.out / f"{algorithm}.json"
        write_atomic(out, json.dumps(doc, indent=1, sort_keys=False) + "\n")
        print(f"wrote {out} ({len(doc['classes'])} classes, commit {commit[:12]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
