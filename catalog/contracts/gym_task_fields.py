"""The task fields of a NeMo-Gym row: what the resource server its agent routes to reads.

gym_routes.py derives, per agent, the fields of its server's verify request model; this is the
per-row check of them (E-GYM-TASK-FIELD), with pydantic's lax coercions, so that a value
pydantic would take is never refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from catalog.contracts.rows import RowViolation, add, type_name

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
        missing = [key for key, required, _ in fields if required and key not in row]
        if missing:  # one cause (the row lacks what the server reads): all of it, in one
            names = ", ".join(f"`{k}`" for k in missing)
            one = len(missing) == 1
            add(
                TASK_FIELD,
                out,
                ", ".join(missing),
                f"{names} {'is' if one else 'are'} missing: agent `{agent}` routes the row "
                f"to resource server `{server}`, whose verify request requires "
                f"{'it' if one else 'them'}",
                f"give each row {names.replace(', ', ' and ')} (in an rl_prep blend, map "
                f"source fields onto {'it' if one else 'them'}), or route the rows to an "
                "agent whose server does not need "
                f"{'it' if one else 'them'}",
            )
        for key, _, kinds in fields:
            if key in row and kinds and not _lax_ok(row[key], kinds):
                add(
                    TASK_FIELD,
                    out,
                    key,
                    f"`{key}` must be {' or '.join(kinds)}, got {type_name(row[key])} "
                    f"(resource server `{server}` of agent `{agent}`)",
                    f"write `{key}` as {' or '.join(kinds)}",
                )
