"""NeMo-RL's config classes (TypedDicts, pydantic models, enums) as a simple type description.

Each class becomes `{"kind", "source": "file:line", "fields": {name: {"type", "required",
"line"}}}`; a type is `{"t": "int" | "float" | "bool" | "str" | "any" | "none" | "ref" | "list" |
"dict" | "literal" | "union", ...}`. Names from outside NeMo-RL are basic types or `any`.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from runners.nemo_rl.schema.source import Module, SourceIndex, leaf

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
LIST_NAMES = {"list", "List", "Sequence", "tuple", "Tuple", "set", "Set", "frozenset", "Iterable"}
DICT_NAMES = {"dict", "Dict", "Mapping", "MutableMapping"}
WRAPPERS = {"NotRequired", "Required", "Annotated", "Final", "ReadOnly"}
RECORDS = {"typeddict", "model"}  # the kinds of class whose fields are config keys


class SchemaBuilder:
    """Turns class definitions into the type description, following imports inside NeMo-RL."""

    def __init__(self, index: SourceIndex) -> None:
        self.index = index
        self.classes: dict[str, dict] = {}
        self.keys: dict[tuple[str, str], str] = {}  # (module, class) -> schema key
        self.pending: list[tuple[str, str]] = []

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
            return union([self.convert(expr.left, modname), self.convert(expr.right, modname)])
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr, modname)
        name = leaf(expr)
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
        head = leaf(expr.value) or ""
        args = list(expr.slice.elts) if isinstance(expr.slice, ast.Tuple) else [expr.slice]
        if head in WRAPPERS:
            return self.convert(args[0], modname)
        if head == "Optional":
            return union([self.convert(args[0], modname), {"t": "none"}])
        if head == "Union":
            return union([self.convert(a, modname) for a in args])
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

    def build_class(self, modname: str, name: str) -> dict:
        mod = self.index.module(modname)
        assert mod is not None
        node = mod.classes[name]
        kind, fields, variant_of = "class", {}, None
        for base in node.bases:
            bname = leaf(base)
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
        extra = _extra(node.keywords)  # class C(BaseModel, extra="forbid")
        values = []
        for stmt in node.body:
            if kind == "enum" and isinstance(stmt, ast.Assign):
                values.extend([stmt.value.value] if isinstance(stmt.value, ast.Constant) else [])
            if isinstance(stmt, ast.Assign) and _is_config_dict(stmt):
                extra = _extra(getattr(stmt.value, "keywords", [])) or extra
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            fname = stmt.target.id
            if _is_classvar(stmt.annotation) or fname == "model_config":
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
        names = {name for _, name in known} | self._aliases_of(known)
        for modname in self.index.modules_with_bases(names):
            mod = self.index.module(modname)
            if mod is None:
                continue
            for cname, node in mod.classes.items():
                for base in node.bases:
                    bname = leaf(base)
                    where = self.resolve(modname, bname) if bname else None
                    if not where or where[0] != "class" or (where[1], where[2]) not in known:
                        continue
                    if (modname, cname) in known:
                        continue
                    parent = self.classes[known[(where[1], where[2])]]
                    if parent["kind"] not in RECORDS:
                        continue
                    sub = self.class_key(modname, cname)
                    parent.setdefault("subclasses", []).append(sub)
        self.drain()
        for entry in self.classes.values():
            if "subclasses" in entry:
                entry["subclasses"] = sorted(set(entry["subclasses"]))

    def _aliases_of(self, known: dict) -> set[str]:
        """Names parsed modules import a known class under (`from m import X as Y` gives Y)."""
        out = set()
        for mod in list(self.index.modules.values()):
            for local, (src, orig) in mod.imports.items() if mod else ():
                if local == orig or not src.startswith("nemo_rl"):
                    continue
                where = self.resolve(src, orig)
                if where and (where[1], where[2]) in known:
                    out.add(local)
        return out


def options(t: dict) -> list[dict]:
    """A type's alternatives: a union's options, else the type itself."""
    return t["options"] if t["t"] == "union" else [t]


def takes_none(t: dict) -> bool:
    """Whether a type accepts None (`none` or `any` among its alternatives)."""
    return any(o["t"] in {"none", "any"} for o in options(t))


def fields_of(classes: dict, name: str) -> dict:
    """A class's fields and those its subclasses add (VllmConfig's under GenerationConfig)."""
    cls = classes.get(name, {})
    out = dict(cls.get("fields", {}))
    for sub in cls.get("subclasses", []):
        for key, spec in classes.get(sub, {}).get("fields", {}).items():
            out.setdefault(key, spec)
    return out


def union(alternatives: list[dict]) -> dict:
    flat: list[dict] = []
    for opt in alternatives:
        for o in options(opt):
            if o not in flat:
                flat.append(o)
    if any(o["t"] == "any" for o in flat):
        return {"t": "any"}
    return flat[0] if len(flat) == 1 else {"t": "union", "options": flat}


def _is_classvar(annotation: ast.expr) -> bool:
    if leaf(annotation) == "ClassVar":
        return True
    return isinstance(annotation, ast.Subscript) and leaf(annotation.value) == "ClassVar"


def _wrapped_in(expr: ast.expr, wrapper: str) -> bool:
    if isinstance(expr, ast.Subscript):
        if leaf(expr.value) == wrapper:
            return True
        if leaf(expr.value) == "Annotated":
            inner = expr.slice.elts[0] if isinstance(expr.slice, ast.Tuple) else expr.slice
            return _wrapped_in(inner, wrapper)
    return False


def _model_field_required(value: ast.expr | None) -> bool:
    if value is None:
        return True
    if isinstance(value, ast.Call) and leaf(value.func) == "Field":
        if any(k.arg in {"default", "default_factory"} for k in value.keywords):
            return False
        if value.args:
            first = value.args[0]
            return isinstance(first, ast.Constant) and first.value is Ellipsis
        return True
    return False


def _is_config_dict(stmt: ast.Assign) -> bool:
    return any(isinstance(t, ast.Name) and t.id == "model_config" for t in stmt.targets)


def _extra(keywords: list[ast.keyword]) -> str | None:
    """The constant `extra=` among a class's or a `ConfigDict(...)` call's keywords."""
    found = [
        k.value.value for k in keywords if k.arg == "extra" and isinstance(k.value, ast.Constant)
    ]
    return str(found[0]) if found else None
