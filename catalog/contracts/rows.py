"""What a row contract returns, and the chat-message checks NeMo-RL's row formats share.

A row contract is a plain function `check(row) -> list[RowViolation]` (empty when the row is
good). No pydantic on this path: it runs once per row of files with millions of rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from catalog.errors import ERROR


@dataclass(frozen=True)
class RowViolation:
    """One broken rule of one row: `field` is a dotted path inside the row (`a.b[2].c`). A
    WARNING is data quality the trainer accepts: the row is counted and reported, never refused."""

    code: str
    field: str
    message: str
    fix: str | None = None
    severity: str = ERROR

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR


def add(
    code: str,
    out: list[RowViolation],
    field: str,
    message: str,
    fix: str | None = None,
    severity: str = ERROR,
) -> None:
    """Append one violation to `out`; a contract binds its code once (`partial(add, CODE)`)."""
    out.append(RowViolation(code, field, message, fix, severity))


RowCheck = Callable[[Any], "list[RowViolation]"]

# Roles NeMo-RL's chat templates take in `messages` / DPO `context` and `completion` lists.
CHAT_ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})


# Python type -> its JSON name; bool before int, as a bool is an int.
_JSON_NAMES = (
    (type(None), "null"),
    (bool, "boolean"),
    (str, "string"),
    ((int, float), "number"),
    (list, "array"),
    (dict, "object"),
)


def type_name(value: Any) -> str:
    """The JSON name of a Python value's type, for messages."""
    return next((name for t, name in _JSON_NAMES if isinstance(value, t)), type(value).__name__)


def is_blank(value: Any) -> bool:
    """An empty or whitespace-only string (what a trainer would learn nothing from)."""
    return type(value) is str and (not value or value.isspace())


def check_chat_messages(
    messages: Any, field: str, code: str, out: list[RowViolation], *, what: str = "messages"
) -> None:
    """A non-empty list of `{role, content}` with a known role and non-empty content."""

    bad = partial(add, code, out)
    if type(messages) is not list:
        got = f"expected a list of {{role, content}} {what}, got {type_name(messages)}"
        return bad(field, got, f'write {field} as [{{"role": "user", "content": "..."}}]')
    if not messages:
        return bad(field, f"{what} list is empty", "give at least one message")
    for i, msg in enumerate(messages):
        at = f"{field}[{i}]"
        if type(msg) is not dict:
            got = f"expected a {{role, content}} object, got {type_name(msg)}"
            bad(at, got, 'write {"role": "user", "content": "..."}')
            continue
        role = msg.get("role")
        if type(role) is not str or role not in CHAT_ROLES:
            got = f"role must be one of {sorted(CHAT_ROLES)}, got {role!r}"
            bad(f"{at}.role", got, "set role to user, assistant or system")
        content = msg.get("content")
        if type(content) is str:
            if not content or content.isspace():
                bad(f"{at}.content", "content is empty", "give the message text")
        elif type(content) is list:
            if not content:
                bad(f"{at}.content", "content list is empty", "give the message text")
        else:
            got = f"content must be a string or a list of parts, got {type_name(content)}"
            bad(f"{at}.content", got, "give the message text as a string")
