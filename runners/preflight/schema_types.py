"""How a config value matches a type of a NeMo-RL schema document, as pydantic's lax mode
judges it ("3" is an int, "yes" a bool): the value side of `runners.preflight.schema`."""

from __future__ import annotations

from typing import Any

TRUE_STRINGS = {"true", "t", "yes", "y", "on", "1"}
BOOL_STRINGS = TRUE_STRINGS | {"false", "f", "no", "n", "off", "0"}


def describe(t: dict) -> str:
    kind = t["t"]
    if kind == "ref":
        return t["name"]
    if kind == "literal":
        return " | ".join(repr(v) for v in t["values"])
    if kind == "union":
        return " | ".join(describe(o) for o in t["options"])
    if kind == "list":
        return f"list[{describe(t['item'])}]"
    if kind == "dict":
        return "dict"
    return "null" if kind == "none" else kind


def lax_ok(value: Any, kind: str) -> bool:
    """Whether pydantic's lax mode accepts `value` for a basic type."""
    if kind == "any":
        return True
    if kind == "none":
        return value is None
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        if isinstance(value, bool):
            return True
        if isinstance(value, int):
            return value in (0, 1)
        return isinstance(value, str) and value.strip().lower() in BOOL_STRINGS
    if kind not in ("int", "float"):
        return False
    if isinstance(value, (bool, int)):
        return True
    if isinstance(value, float):
        return kind == "float" or value.is_integer()
    if not isinstance(value, str):
        return False
    try:
        (int if kind == "int" else float)(value.strip())
    except ValueError:
        return False
    return True


def literal_ok(value: Any, values: list) -> bool:
    """`value` is one of `values`, a bool matching only a bool (pydantic's literal check)."""
    return any(
        value is v if isinstance(v, bool) else value == v and not isinstance(value, bool)
        for v in values
    )


def as_bool(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in BOOL_STRINGS:
        return value.strip().lower() in TRUE_STRINGS
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    return value


def shape_matches(value: Any, t: dict) -> bool:
    kind = t["t"]
    if kind in {"ref", "dict"}:
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, (list, tuple))
    return False
