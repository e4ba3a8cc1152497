"""The task fields of a NeMo-Gym row: what the resource server its agent routes to reads.

gym_routes.py derives, per agent, the fields of its server's verify request model; this is the
per-row check of them (E-GYM-TASK-FIELD), with pydantic's lax coercions, so that a value
pydantic would take is never refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from catalog.contracts.rows import RowViolation, type_name

TASK_FIELD = "E-GYM-TASK-FIELD"
# JSON Schema type name -> the Python types a decoded JSON value of it has.
PY_TYPES = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def _lax_ok(value: Any, kinds: Iterable[str]) -> bool:
    """Whether pydantic (lax mode) takes `value` for a field of these JSON types: a number
    or boolean may come as a string of one or as a boolean, an integer as an integral float;
    a string field takes only a string."""
    for kind in kinds:
        if type(value) in PY_TYPES[kind]:
            return True
        if kind in ("integer", "number", "boolean"):
            if type(value) is bool or (kind == "boolean" and value in (0, 1)):
                return True
            if kind == "integer" and type(value) is float and value.is_integer():
                return True
            if type(value) is str and _numeric_text(value.strip().lower(), kind):
                return True
    return False


def _numeric_text(text: str, kind: str) -> bool:
    if kind == "boolean":
        return text in ("true", "false", "yes", "no", "on", "off", "1", "0")
    digits = text.lstrip("+-")
    return (digits.replace(".", "", 1) if kind == "number" else digits).isdigit()


class TaskFields:
    """The task fields each routed agent's resource server reads (gym_routes.py's `routes`)."""

    def __init__(self, routes: dict[str, Any]) -> None:
        self.routes = {
            agent: (
                str(route.get("server")),
                [
                    (key, bool(spec.get("required")), spec.get("types"))
                    for key, spec in (route.get("fields") or {}).items()
                ],
            )
            for agent, route in routes.items()
            if isinstance(route, dict)
        }

    def check(self, row: dict, agent: str, out: list[RowViolation]) -> None:
        route = self.routes.get(agent)
        if route is None:
            return
        server, fields = route
        for key, required, kinds in fields:
            if key not in row:
                if required:
                    out.append(
                        RowViolation(
                            TASK_FIELD,
                            key,
                            f"`{key}` is missing: agent `{agent}` routes the row to resource "
                            f"server `{server}`, whose verify request requires it",
                            f"give each row `{key}` (in an rl_prep blend, map a source field "
                            "onto it), or route the rows to an agent whose server does not "
                            "need it",
                        )
                    )
            elif kinds and not _lax_ok(row[key], kinds):
                out.append(
                    RowViolation(
                        TASK_FIELD,
                        key,
                        f"`{key}` must be {' or '.join(kinds)}, got {type_name(row[key])} "
                        f"(resource server `{server}` of agent `{agent}`)",
                        f"write `{key}` as {' or '.join(kinds)}",
                    )
                )
