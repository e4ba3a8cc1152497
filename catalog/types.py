"""The artifact type graph: `is_a` (implicit compatibility) and `convert_to` (needs a converter)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.errors import Finding, StepsError
from catalog.tomlfile import line_of, load_toml

TYPES_PATH = Path(__file__).parent / "types.toml"
_KEYS = {"description", "is_a", "convert_to", "layout", "contract"}
LAYOUTS = {"jsonl", "file", "dir"}


@dataclass(frozen=True)
class Conversion:
    target: str
    via: str


@dataclass(frozen=True)
class ArtifactType:
    name: str
    description: str
    layout: str
    contract: str
    is_a: tuple[str, ...] = ()
    convert_to: tuple[Conversion, ...] = ()


@dataclass
class TypeGraph:
    types: dict[str, ArtifactType]
    path: Path = TYPES_PATH
    findings: list[Finding] = field(default_factory=list)

    def __contains__(self, name: str) -> bool:
        return name in self.types

    def ancestors(self, name: str) -> list[str]:
        """The type itself and every type it `is_a`, transitively, nearest first."""
        out: list[str] = []
        todo = [name]
        while todo:
            t = todo.pop(0)
            if t in out:
                continue
            out.append(t)
            if t in self.types:
                todo.extend(self.types[t].is_a)
        return out

    def is_a(self, sub: str, sup: str) -> bool:
        return sup in self.ancestors(sub)

    def subtypes(self, name: str) -> list[str]:
        """Every type that is_a `name`, including itself."""
        return sorted(t for t in self.types if self.is_a(t, name))

    def conversions(self, name: str) -> list[Conversion]:
        """convert_to edges of the type and of everything it is_a (inherited)."""
        out: list[Conversion] = []
        for t in self.ancestors(name):
            if t in self.types:
                out.extend(c for c in self.types[t].convert_to if c not in out)
        return out

    def cycles(self) -> list[list[str]]:
        """Each `is_a` cycle once, as the list of types around it (child before parent).

        graphlib reports one cycle at a time; breaking an edge of each finds the next.
        """
        from graphlib import CycleError, TopologicalSorter

        parents = {t: set(spec.is_a) for t, spec in self.types.items()}
        found: list[list[str]] = []
        while True:
            try:
                TopologicalSorter(parents).prepare()
                return found
            except CycleError as exc:
                loop = list(reversed(exc.args[1][:-1]))  # graphlib lists parents first
                found.append(loop)
                parents[loop[0]].discard(loop[1 % len(loop)])


def load_types(path: Path = TYPES_PATH) -> TypeGraph:
    """Load types.toml; malformed entries become findings (the graph keeps what parsed)."""
    raw = load_toml(path, code="E-TYPES-TOML")
    types: dict[str, ArtifactType] = {}
    findings: list[Finding] = []
    for name, spec in raw.items():
        line = line_of(path, f"[{name}]")
        if not isinstance(spec, dict):
            findings.append(Finding("E-TYPES-SCHEMA", f"'{name}' must be a table", str(path), line))
            continue
        unknown = sorted(set(spec) - _KEYS)
        if unknown:
            findings.append(
                Finding(
                    "E-TYPES-SCHEMA",
                    f"type '{name}' has unknown keys {unknown}",
                    str(path),
                    line,
                    fix=f"allowed keys: {sorted(_KEYS)}",
                )
            )
        if spec.get("layout") not in LAYOUTS or not spec.get("description"):
            findings.append(
                Finding(
                    "E-TYPES-SCHEMA",
                    f"type '{name}' needs a description and a layout in {sorted(LAYOUTS)}",
                    str(path),
                    line,
                )
            )
        is_a = spec.get("is_a", [])
        if not (isinstance(is_a, list) and all(isinstance(t, str) for t in is_a)):
            findings.append(
                Finding(
                    "E-TYPES-SCHEMA",
                    f"type '{name}': is_a must be a list of type names",
                    str(path),
                    line_of(path, "is_a") if line is None else line,
                    fix='write is_a = ["parent_type"]',
                )
            )
            is_a = []
        raw_conv = spec.get("convert_to", [])
        good = isinstance(raw_conv, list) and all(
            isinstance(c, dict) and set(c) == {"type", "via"} for c in raw_conv
        )
        if not good:
            findings.append(
                Finding(
                    "E-TYPES-SCHEMA",
                    f"type '{name}': convert_to must be a list of {{ type, via }} tables",
                    str(path),
                    line,
                    fix='write convert_to = [{ type = "target_type", via = "category/step" }]',
                )
            )
        conv = tuple(
            Conversion(str(c.get("type")), str(c.get("via")))
            for c in (raw_conv if isinstance(raw_conv, list) else [])
            if isinstance(c, dict)
        )
        types[name] = ArtifactType(
            name=name,
            description=str(spec.get("description", "")),
            layout=str(spec.get("layout", "")),
            contract=str(spec.get("contract", name)),
            is_a=tuple(is_a),
            convert_to=conv,
        )
    return TypeGraph(types=types, path=path, findings=findings)


def types_path(root: Path) -> Path:
    """Where a catalog root keeps its types: `catalog/types.toml` for the built-in root."""
    from catalog.discovery import BUILTIN_ROOT

    return TYPES_PATH if root == BUILTIN_ROOT else root / "types.toml"


def load_catalog_types(extra_roots=(), include_builtin: bool = True) -> TypeGraph:
    """The types of every root, in root order (later roots add types; a redefinition wins).

    A root's malformed `types.toml` becomes a finding in `graph.findings`, not an exception.
    """
    from catalog.discovery import catalog_roots

    graph = TypeGraph(types={})
    first = True
    for root in catalog_roots(extra_roots, include_builtin):
        path = types_path(root)
        if not path.is_file():
            continue
        try:
            more = load_types(path)
        except StepsError as exc:
            graph.findings.append(exc.finding)
            continue
        if first:
            graph.path, first = path, False
        graph.types.update(more.types)
        graph.findings.extend(more.findings)
    return graph


def mapped_type(port: dict, value: Any) -> Any:
    """The type a `type_key` value names: the value itself, or its `type_map` entry."""
    table = port.get("type_map")
    if not table:
        return value
    return table.get(str(value).lower() if isinstance(value, bool) else str(value))


def require_type(graph: TypeGraph, name: str) -> ArtifactType:
    if name not in graph:
        from catalog.did_you_mean import did_you_mean

        hint = did_you_mean(name, graph.types, 3, otherwise=f"see {graph.path.name}")
        raise StepsError("E-TYPE-UNKNOWN", f"unknown artifact type '{name}'", fix=hint, exit_code=2)
    return graph.types[name]
