"""The `input` of a NeMo-Gym request: messages, their content parts, and the other items.

Which item types, roles and content parts exist is the judging Gym's (gym_facts.py); the checks
add what Gym's item union lacks. Before 0.7.0 the union is lenient: an untyped `{"role":
"user"}` or `{"foo": 1}` passes (as an mcp_list_tools item) and extra message keys such as
`tool_calls` are dropped; 0.7.0 routes message-shaped items to the message models, yet still
drops extra keys. So this contract checks roles, content and non-empty user text itself.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from catalog.contracts.gym_facts import GymFacts
from catalog.contracts.rows import RowViolation, add, type_name

ROW = "E-GYM-ROW"
# Content parts with a text field the contract checks; the others are taken as they are.
TEXT_PARTS = {"input_text": "text", "output_text": "text", "refusal": "refusal"}
# Parts of a replayed assistant output: Gym takes such a message as its output message, which
# needs an `id`, only these parts, and `annotations` on each output_text.
OUTPUT_PARTS = ("output_text", "refusal")  # tuples: a bad value may be unhashable
STATUSES = ("in_progress", "completed", "incomplete")


violation = partial(add, ROW)  # an E-GYM-ROW violation, appended


def _text_part_hint(gym: GymFacts) -> str:
    """Why `{"type": "text"}` is wrong, in the words true for the judging Gym."""
    if gym.messages_discriminated:
        said = f'{gym.label} rejects the Chat Completions form {{"type": "text"}}'
    else:
        said = (
            f'{gym.label} does not reject the Chat Completions form {{"type": "text"}} '
            "but takes the whole item as an mcp_list_tools item, so the model never sees it"
        )
    return f'use {{"type": "input_text", "text": "..."}} ({said})'


def _check_parts(parts: list, field: str, gym: GymFacts, out: list[RowViolation]) -> None:
    if not parts:
        violation(out, field, "content list is empty", "give at least one input_text part")
        return
    for j, part in enumerate(parts):
        kind = part.get("type") if type(part) is dict else None
        key = TEXT_PARTS.get(kind) if type(kind) is str and gym.has_part(kind) else None
        if key is not None:
            if type(part.get(key)) is not str:
                said = f"a {kind} part needs a string `{key}`"
                fix = f'write {{"type": "{kind}", "{key}": "..."}}'
                violation(out, f"{field}[{j}].{key}", said, fix)
        elif type(kind) is not str or not gym.has_part(kind):
            shown = ", ".join(sorted(gym.content_parts or TEXT_PARTS))
            hint = _text_part_hint(gym) if kind == "text" else f"use one of: {shown}"
            got = kind if type(part) is dict else type_name(part)
            violation(out, f"{field}[{j}]", f"unknown content part {got!r} ({gym.label})", hint)


def _check_message(item: dict, field: str, gym: GymFacts, out: list[RowViolation]) -> None:
    role = item.get("role")
    if type(role) is not str or role not in gym.message_roles:
        if role == "tool":
            fix = 'send a tool result as {"type": "function_call_output", "call_id", "output"}'
        elif role is None:
            fix = 'add "role": "user" (or assistant, system, developer)'
        else:
            fix = f"use role {', '.join(sorted(gym.message_roles))}"
        roles = "/".join(sorted(gym.message_roles))
        violation(out, f"{field}.role", f"role must be {roles}, got {role!r}", fix)
    content = item.get("content")
    if type(content) is str:
        if role == "user" and (not content or content.isspace()):
            violation(out, f"{field}.content", "user message is empty", "give the prompt")
    elif type(content) is list:
        _check_parts(content, f"{field}.content", gym, out)
        if any(type(p) is dict and p.get("type") in OUTPUT_PARTS for p in content):
            _check_output_message(item, content, field, gym, out)
    else:
        got = "missing" if "content" not in item else f"a {type_name(content)}"
        said = f"content must be a string or a list of typed parts, got {got}"
        violation(out, f"{field}.content", said, "give the message text as a string")
    if "tool_calls" in item:
        violation(
            out,
            f"{field}.tool_calls",
            f"{gym.label} silently drops Chat Completions `tool_calls` on a message",
            'write each call as a {"type": "function_call", "call_id", "name", "arguments"} '
            "item after the message",
        )


def _check_output_message(
    item: dict, parts: list, field: str, gym: GymFacts, out: list[RowViolation]
) -> None:
    """A message replaying model output (output_text / refusal parts), as Gym's output message
    model takes it in every supported version."""
    if item.get("role") != "assistant" and item.get("role") in ("user", "system", "developer"):
        said = "output_text and refusal parts belong to an assistant message"
        violation(out, f"{field}.role", said, "use input_text parts, or role assistant")
    if type(item.get("id")) is not str:
        said = "an assistant message replaying output parts needs a string `id`"
        fix = 'give the id of the response message, e.g. "id": "msg_1"'
        violation(out, f"{field}.id", said, fix)
    if "status" in item and item["status"] not in STATUSES:
        violation(out, f"{field}.status", "status must be in_progress, completed or incomplete")
    for j, part in enumerate(parts):
        kind = part.get("type") if type(part) is dict else None
        if kind == "output_text" and type(part.get("annotations")) is not list:
            said = "an output_text part needs an `annotations` list"
            violation(out, f"{field}.content[{j}].annotations", said, 'add "annotations": []')
        elif type(kind) is str and kind not in OUTPUT_PARTS and gym.has_part(kind):
            said = f"an {kind} part in a message with output parts"
            fix = "a replayed assistant message takes only output_text and refusal parts"
            violation(out, f"{field}.content[{j}]", said, fix)


def _require_str(item: dict, key: str, field: str, kind: str, out: list[RowViolation]) -> None:
    if type(item.get(key)) is not str:
        said = f"a {kind} item needs a string `{key}`"
        violation(out, f"{field}.{key}", said, f"set {key} on the item")


def _check_item(item: Any, field: str, gym: GymFacts, out: list[RowViolation]) -> None:
    if type(item) is not dict:
        violation(out, field, f"an input item must be an object, got {type_name(item)}")
        return
    kind = item.get("type")
    if kind is not None and (type(kind) is not str or not gym.has_item(kind)):
        said = f"unknown input item type {kind!r} ({gym.label})"
        fix = "use message, function_call, function_call_output or reasoning"
        violation(out, f"{field}.type", said, fix)
    elif kind is None or kind == "message":
        _check_message(item, field, gym, out)
    elif kind == "function_call":
        for key in ("call_id", "arguments"):
            _require_str(item, key, field, kind, out)
        name = item.get("name")
        if type(name) is not str or not name:
            violation(out, f"{field}.name", "a function_call item needs a non-empty `name`")
    elif kind == "function_call_output":
        _require_str(item, "call_id", field, kind, out)
        output = item.get("output")
        if type(output) is not str and type(output) is not list:
            said = f"function_call_output needs `output` as a string, got {type_name(output)}"
            violation(out, f"{field}.output", said, "serialise the tool result to a string")
    elif kind == "reasoning":
        _require_str(item, "id", field, kind, out)
        summary = item.get("summary")
        if type(summary) is not list or not all(
            type(s) is dict and s.get("type") == "summary_text" and type(s.get("text")) is str
            for s in summary
        ):
            said = "a reasoning item needs a `summary` list of summary_text parts"
            fix = 'write "summary": [{"type": "summary_text", "text": "..."}]'
            violation(out, f"{field}.summary", said, fix)


def check_input(inp: Any, gym: GymFacts, out: list[RowViolation], allow_empty_input: bool) -> None:
    """`responses_create_params.input`: a non-blank string or a list of valid items; `[]` is
    legal unless `allow_empty_input` is false (agents such as aviary build the prompt)."""
    if type(inp) is list:
        if not inp and not allow_empty_input:
            violation(
                out,
                "responses_create_params.input",
                "input list is empty",
                "add the prompt (or drop the option allow_empty_input=false if your agent "
                "builds it from the task, as aviary or toolsandbox do)",
            )
        roles = gym.message_roles
        for i, item in enumerate(inp):
            # Fast path: an untyped message with string content (most items of most rows).
            if type(item) is dict and "type" not in item and "tool_calls" not in item:
                content = item.get("content")
                role = item.get("role")
                if (
                    type(content) is str
                    and type(role) is str
                    and role in roles
                    and (role != "user" or (content and not content.isspace()))
                ):
                    continue
            _check_item(item, f"responses_create_params.input[{i}]", gym, out)
    elif type(inp) is str:
        if not inp or inp.isspace():
            violation(out, "responses_create_params.input", "input is empty", "give the prompt")
    else:
        said = f"input must be a string or a list of items, got {type_name(inp)}"
        violation(out, "responses_create_params.input", said)
