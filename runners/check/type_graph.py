"""Checks of the artifact type graph (types.toml) and the ports' `type_map`."""

from __future__ import annotations

from catalog.did_you_mean import with_suggestion
from catalog.errors import Finding
from catalog.tomlfile import line_of
from catalog.types import TypeGraph
from runners.check.manifests import StepUnderCheck


def type_graph(graph: TypeGraph, steps: dict[str, StepUnderCheck]) -> list[Finding]:
    """is_a parents exist, no is_a cycles, every convert_to has a converter step that fits."""
    out = []
    path = str(graph.path)
    names = sorted(graph.types)
    for name, t in sorted(graph.types.items()):
        at = line_of(graph.path, f"[{name}]")
        for parent in t.is_a:
            if parent not in graph:
                out.append(
                    Finding(
                        "E-TYPES-PARENT",
                        f"type '{name}' is_a unknown type '{parent}'",
                        path,
                        at,
                        fix=with_suggestion(
                            parent, names, "declare the parent type or fix the name"
                        ),
                    )
                )
        for c in t.convert_to:
            out += _conversion(graph, name, c, steps, at)
    for step in steps.values():
        out += _type_maps(graph, step)
    for cyc in graph.cycles():
        out.append(
            Finding(
                "E-TYPES-CYCLE",
                f"is_a cycle: {' -> '.join([*cyc, cyc[0]])}",
                path,
                line_of(graph.path, f"[{cyc[0]}]"),
                fix="is_a must form a hierarchy: remove one edge of the cycle",
            )
        )
    return out


def _type_maps(graph: TypeGraph, step: StepUnderCheck) -> list[Finding]:
    """A port's `type_map` names subtypes of the port's own type."""
    out = []
    for port in [*step.entry.consumes, *step.entry.produces]:
        base = str(port.get("type"))
        for value, sub in (port.get("type_map") or {}).items():
            if sub not in graph or not graph.is_a(sub, base):
                out.append(
                    Finding(
                        "E-TYPE-KEY",
                        f"port '{port.get('name')}' maps {port.get('type_key')}={value} to "
                        f"'{sub}', which is not a subtype of {base}",
                        str(step.entry.dir / "step.toml"),
                        fix=with_suggestion(sub, graph.subtypes(base), "name a subtype"),
                    )
                )
    return out


def _conversion(
    graph: TypeGraph, name: str, c, steps: dict[str, StepUnderCheck], at
) -> list[Finding]:
    path = str(graph.path)
    if c.target not in graph:
        return [
            Finding(
                "E-CONVERT-VIA",
                f"type '{name}' converts to unknown type '{c.target}'",
                path,
                at,
                fix=with_suggestion(c.target, sorted(graph.types), "declare the target type"),
            )
        ]
    step = steps.get(c.via)
    if step is None:
        return [
            Finding(
                "E-CONVERT-VIA",
                f"type '{name}' converts to '{c.target}' via '{c.via}', which is not a step",
                path,
                at,
                fix=with_suggestion(c.via, sorted(steps), "name an existing converter step id"),
            )
        ]
    ins = [str(p.get("type")) for p in step.entry.consumes]
    outs = [str(p.get("type")) for p in step.entry.produces]
    problems = []
    if not any(graph.is_a(name, t) for t in ins):
        problems.append(f"consumes none of the types '{name}' is_a (it consumes {ins or 'none'})")
    if not any(graph.is_a(t, c.target) for t in outs):
        problems.append(f"produces nothing that is_a '{c.target}' (it produces {outs or 'none'})")
    return [
        Finding(
            "E-CONVERT-VIA",
            f"converter '{c.via}' for {name} -> {c.target} {problem}",
            path,
            at,
            fix=f"make {c.via} consume {name} (or a parent) and produce {c.target} (or a subtype)",
        )
        for problem in problems
    ]
