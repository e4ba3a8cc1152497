"""The row fields each NeMo-Gym resource server verifies, read from its source with `ast`.

A server's `verify(self, body: <Model>)` takes a pydantic model extending Gym's
`BaseVerifyRequest` with task fields (math_with_judge: `question`, `expected_answer`); a row
without them is not rejected before reward time, where it scores nothing. The model is read from
`resources_servers/<server>/<entrypoint>` without importing Gym: the fields it declares or
inherits from resources_servers modules, each required (no default) or not, with its JSON types.
Gym's own bases are the framework's, not task fields; a base from elsewhere makes the server
"not derived", with the reason. Pydantic validators (code) are not modelled.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from catalog.contracts.gym_source import _Module, _name

SERVERS_DIR = "resources_servers"
# Gym's own request bases; their fields are filled by the framework, not read from the row.
FRAMEWORK_MODULE = "nemo_gym"
# Keys the framework fills or reads itself (Gym's RESERVED_ROW_KEYS, and the rollout's
# `response`, which some servers re-declare with a narrower type).
RESERVED = frozenset(
    {"responses_create_params", "response", "agent_ref", "task_source", "_ng_task_index"}
)


@dataclass(frozen=True)
class TaskField:
    """One row field a server's verify model declares: required when it has no default;
    `types` the JSON types pydantic takes for it (None: not checked)."""

    required: bool
    types: tuple[str, ...] | None


@dataclass(frozen=True)
class ServerFields:
    """What one resource server reads from a row, or why that could not be derived."""

    server: str
    model: str | None = None
    fields: dict[str, TaskField] = field(default_factory=dict)
    reason: str | None = None  # set when the fields could not be derived

    def to_option(self) -> dict[str, Any]:
        """The JSON form the row contract takes (its `routes` option)."""
        return {
            "server": self.server,
            "fields": {
                k: {"required": f.required, "types": list(f.types) if f.types else None}
                for k, f in self.fields.items()
            },
        }


def _imports(tree: ast.Module) -> dict[str, str]:
    """Names imported at module level, and the module each comes from."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                out[alias.asname or alias.name] = node.module
    return out


def _verify_model(module: _Module) -> str | None:
    """The class named by the body annotation of the (first) server class's `verify`."""
    for cls in module.classes.values():
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "verify":
                args = node.args.args
                ann = args[1].annotation if len(args) >= 2 else None
                if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
                    return ann.value
                if ann is not None and _name(ann):
                    return _name(ann)
    return None


def _required(value: ast.expr | None) -> bool:
    """No default, or `Field(...)` / `Field()` without default or default_factory."""
    if value is None:
        return True
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "Field":
        keywords = {k.arg for k in value.keywords}
        if "default" in keywords or "default_factory" in keywords:
            return False
        first = value.args[0] if value.args else None
        return first is None or (isinstance(first, ast.Constant) and first.value is Ellipsis)
    return False


class _Sources:
    """Parsed resources_servers modules of one Gym tree by dotted name: a verify model may
    extend another server's (`resources_servers.mcqa.app`)."""

    def __init__(self, root: Path | None, main: str, tree: ast.Module) -> None:
        self.root = root
        self.parsed: dict[str, tuple[_Module, dict[str, str]] | None] = {
            main: (_Module(tree), _imports(tree))
        }

    def module(self, name: str) -> tuple[_Module, dict[str, str]] | None:
        if name not in self.parsed:
            self.parsed[name] = None
            if self.root is not None and name.startswith(SERVERS_DIR + "."):
                path = self.root.joinpath(*name.split(".")).with_suffix(".py")
                try:
                    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
                except (OSError, SyntaxError):
                    return None
                self.parsed[name] = (_Module(tree), _imports(tree))
        return self.parsed[name]


def derive_server_fields(
    source: str, server: str, where: str, gym_root: Path | None = None, main: str = "app"
) -> ServerFields:
    """The task fields of one server's entrypoint text (see the module docstring); models of
    other servers it extends are read from `gym_root` when given."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return ServerFields(server, reason=f"{where} does not parse (line {exc.lineno})")
    modname = f"{SERVERS_DIR}.{server}.{main}"
    sources = _Sources(gym_root, modname, tree)
    module, _ = sources.module(modname)  # type: ignore[misc]
    model = _verify_model(module)
    if model is None:
        return ServerFields(server, reason=f"{where} has no `verify(self, body: Model)`")
    order: list[tuple[_Module, str]] = []
    seen: set[tuple[str, str]] = set()

    def walk(modname: str, name: str) -> str | None:
        """Append `name`'s model classes, bases first; a reason when one cannot be read."""
        found = sources.module(modname)
        if found is None:
            return f"{modname} cannot be read"
        mod, imports = found
        if name not in mod.classes:
            origin = imports.get(name)
            if origin is None:
                return f"{name} is not defined in {modname}"
            if origin.split(".")[0] == FRAMEWORK_MODULE or name == "BaseModel":
                return None  # Gym's or pydantic's own base: no task fields
            if not origin.startswith(SERVERS_DIR + "."):
                return f"{name} comes from {origin}"
            return walk(origin, name)
        if (modname, name) in seen:
            return None
        seen.add((modname, name))
        for base in mod.classes[name].bases:
            base_name = _name(base)
            if base_name and base_name not in ("object", "BaseModel"):
                problem = walk(modname, base_name)
                if problem:
                    return problem
        order.append((mod, name))
        return None

    problem = walk(modname, model)
    if problem:
        return ServerFields(server, model, reason=f"its verify model {model}: {problem}")
    fields: dict[str, TaskField] = {}
    for mod, name in order:  # bases first: a subclass's annotation wins
        for stmt in mod.classes[name].body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                key = stmt.target.id
                if key.startswith("_") or key in RESERVED or _is_classvar(stmt.annotation):
                    continue
                kinds = mod.json_types(stmt.annotation)
                fields[key] = TaskField(
                    _required(stmt.value), tuple(sorted(kinds)) if kinds is not None else None
                )
    return ServerFields(server, model, fields)


def _is_classvar(annotation: ast.expr) -> bool:
    head = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return _name(head) == "ClassVar"


def server_fields(gym_root: Path, server: str, entrypoint: str = "app.py") -> ServerFields:
    """The task fields of server `server` (its folder under resources_servers/) in a Gym tree,
    cached by the file's identity."""
    path = Path(gym_root) / SERVERS_DIR / server / entrypoint
    try:
        st = path.stat()
    except OSError:
        rel = f"{SERVERS_DIR}/{server}/{entrypoint}"
        return ServerFields(server, reason=f"{rel} is not in the Gym tree")
    return _cached(str(gym_root), server, entrypoint, st.st_mtime_ns, st.st_size)


@cache
def _cached(root: str, server: str, entrypoint: str, _mtime: int, _size: int) -> ServerFields:
    path = Path(root) / SERVERS_DIR / server / entrypoint
    text = path.read_text(encoding="utf-8", errors="replace")
    where = f"{SERVERS_DIR}/{server}/{entrypoint}"
    return derive_server_fields(text, server, where, Path(root), Path(entrypoint).stem)
