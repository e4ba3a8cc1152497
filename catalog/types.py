"""The artifact type graph: `is_a` (implicit compatibility) and `convert_to` (needs a converter)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from catalog.content_memo import ContentMemo
from catalog.errors import Finding, StepsError
from catalog.model_errors import dotted, findings_from, line_of, text_lines
from catalog.tomlfile import parse_toml, read_bytes

TYPES_PATH = Path(__file__).parent / "types.toml"
LAYOUTS = {"jsonl", "file", "dir"}
_GRAPHS = ContentMemo(max_entries=32)  # (path, bytes) -> TypeGraph: most commands read one


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
        """Each `is_a` cycle once, child before parent (graphlib reports one at a time: breaking
        an edge of each finds the next)."""
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


class _Conversion(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    type: str
    via: str


class TypeEntry(BaseModel):
    """One `[name]` table of types.toml."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    description: str = Field(min_length=1)
    layout: Literal["jsonl", "file", "dir"]
    contract: str | None = None
    is_a: list[str] = []
    convert_to: list[_Conversion] = []


_FIXES = {
    "is_a": 'write is_a = ["parent_type"]',
    "convert_to": 'write convert_to = [{ type = "target_type", via = "category/step" }]',
    "description": "give the type a description",
    "layout": f"set layout to one of: {', '.join(sorted(LAYOUTS))}",
}


def _fix(err: Any, loc: tuple) -> str | None:
    if err["type"] == "extra_forbidden":
        return f"allowed keys: {', '.join(sorted(TypeEntry.model_fields))}"
    return _FIXES.get(loc[0]) if loc else None


# What a type keeps of the keys that did not validate (the graph keeps what parsed).
_EMPTY: dict = {"description": "", "layout": "", "contract": None, "is_a": [], "convert_to": []}


def load_types(path: Path = TYPES_PATH) -> TypeGraph:
    """Load types.toml; malformed entries become findings (the graph keeps what parsed).
    The same file with the same bytes again gives a copy of the graph built the first time."""
    content = read_bytes(path, code="E-TYPES-TOML")
    return _GRAPHS.get((str(path), content), lambda: _graph(path, content), len(content))


def _graph(path: Path, content: bytes) -> TypeGraph:
    raw = parse_toml(content, path, code="E-TYPES-TOML")
    lines = text_lines(content.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n"), True)
    types: dict[str, ArtifactType] = {}
    findings: list[Finding] = []
    for name, spec in raw.items():
        if not isinstance(spec, dict):
            at = line_of(lines, name)
            findings.append(Finding("E-TYPES-SCHEMA", f"'{name}' must be a table", str(path), at))
            continue
        try:
            entry = TypeEntry.model_validate(spec).model_dump()
        except ValidationError as exc:
            findings += findings_from(
                exc,
                code="E-TYPES-SCHEMA",
                path=path,
                data=spec,
                locate=lambda loc: line_of(lines, name, *loc),  # noqa: B023 - called at once
                message=lambda err, loc: f"type '{name}' {dotted(loc)}: {err['msg']}",  # noqa: B023
                fix=_fix,
            )
            bad = {e["loc"][0] for e in exc.errors() if e["loc"]}
            entry = {**_EMPTY, **{k: v for k, v in spec.items() if k in _EMPTY and k not in bad}}
        types[name] = ArtifactType(
            name=name,
            description=entry["description"],
            layout=entry["layout"],
            contract=entry["contract"] or name,
            is_a=tuple(entry["is_a"]),
            convert_to=tuple(Conversion(c["type"], c["via"]) for c in entry["convert_to"]),
        )
    return TypeGraph(types=types, path=path, findings=findings)


def types_path(root: Path) -> Path:
    """Where a catalog root keeps its types: `catalog/types.toml` for the built-in root."""
    from catalog.discovery import BUILTIN_ROOT

    return TYPES_PATH if root == BUILTIN_ROOT else root / "types.toml"


def load_catalog_types(extra_roots=(), include_builtin: bool = True) -> TypeGraph:
    """The types of every root in order (a redefinition wins); a malformed `types.toml` is a
    finding in `graph.findings`, not an exception."""
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
        from catalog.did_you_mean import close_matches, phrase

        part_of = [t for t in graph.types if name.lower() in t.split("_")]  # `hf`, `jsonl`
        near = close_matches(name, graph.types, 3) or part_of[:3]
        hint = phrase(near, otherwise=f"see {graph.path.name} (`python -m steps list --types`)")
        raise StepsError("E-TYPE-UNKNOWN", f"unknown artifact type '{name}'", fix=hint, exit_code=2)
    return graph.types[name]
