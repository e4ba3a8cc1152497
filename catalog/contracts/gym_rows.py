"""NeMo-Gym rows: `responses_create_params` (an OpenAI Responses request) plus `agent_ref`.

Facts, checked against NeMo-Gym at the pin (`nemo_gym/openai_utils.py`,
`NeMoGymResponseCreateParamsNonStreaming`, `extra="forbid"`): only `input` is required, a
string or a list of input items; tools use the flat Responses form. Gym's item union is
lenient (an untyped `{"role": "user"}` or `{"foo": 1}` passes, `input: []` passes, extra
message keys such as `tool_calls` are silently dropped), so this contract adds the role,
content and non-empty checks Gym lacks. Upstream reads only `agent_ref.name` to route a row,
so a missing `agent_ref.type` is accepted; a wrong one is not.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from catalog.contracts.rows import RowCheck, RowViolation, type_name

ROW = "E-GYM-ROW"
AGENT = "E-GYM-AGENT-REF"
AGENT_TYPE = "responses_api_agents"

# Every field of NeMoGymResponseCreateParamsNonStreaming at the Gym pin.
REQUEST_FIELDS = frozenset(
    {
        "background",
        "include",
        "input",
        "instructions",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "model",
        "parallel_tool_calls",
        "previous_response_id",
        "prompt",
        "reasoning",
        "service_tier",
        "store",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "truncation",
        "user",
        "stream",
    }
)
MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
# Content parts of a Responses message: input parts, and the output parts an assistant replays.
TEXT_PARTS = {"input_text": "text", "output_text": "text", "refusal": "refusal"}
OTHER_PARTS = frozenset({"input_image", "input_file", "input_audio"})
# Other members of Gym's input-item union: hosted-tool calls and their client-side outputs.
OTHER_ITEMS = frozenset(
    {
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "file_search_call",
        "web_search_call",
        "computer_call",
        "computer_call_output",
        "image_generation_call",
        "code_interpreter_call",
        "local_shell_call",
        "local_shell_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
    }
)
FUNCTION_TOOL_KEYS = ("type", "name", "parameters", "strict")
# Scalar request fields: what JSON type each must have (None is always allowed).
_NUMBER = (int, float)
SCALAR_TYPES: dict[str, tuple[type, ...]] = {
    "temperature": _NUMBER,
    "top_p": _NUMBER,
    "max_output_tokens": (int,),
    "max_tool_calls": (int,),
    "top_logprobs": (int,),
    "instructions": (str,),
    "model": (str,),
    "previous_response_id": (str,),
    "user": (str,),
    "service_tier": (str,),
    "truncation": (str,),
    "background": (bool,),
    "store": (bool,),
    "metadata": (dict,),
    "reasoning": (dict,),
    "text": (dict,),
    "prompt": (dict,),
    "include": (list,),
}
# Request fields checked one by one (the others are scalars, or unknown keys).
_STRUCTURED = frozenset({"input", "tools", "parallel_tool_calls", "tool_choice", "stream"})
_FUNCTION_TOOL_KEYSET = frozenset(FUNCTION_TOOL_KEYS)


def _v(field: str, message: str, fix: str | None = None) -> RowViolation:
    return RowViolation(ROW, field, message, fix)


def _check_parts(parts: list, field: str, out: list[RowViolation]) -> None:
    if not parts:
        out.append(_v(field, "content list is empty", "give at least one input_text part"))
        return
    for j, part in enumerate(parts):
        kind = part.get("type") if type(part) is dict else None
        key = TEXT_PARTS.get(kind) if type(kind) is str else None
        if key is not None:
            if type(part.get(key)) is not str:
                out.append(
                    _v(
                        f"{field}[{j}].{key}",
                        f"a {kind} part needs a string `{key}`",
                        f'write {{"type": "{kind}", "{key}": "..."}}',
                    )
                )
        elif type(kind) is not str or kind not in OTHER_PARTS:
            hint = (
                'use {"type": "input_text", "text": "..."} (the Chat Completions form '
                '{"type": "text"} is rejected by Gym)'
                if kind == "text"
                else "use input_text, input_image, input_file or output_text parts"
            )
            got = kind if type(part) is dict else type_name(part)
            out.append(_v(f"{field}[{j}]", f"unknown content part {got!r}", hint))


def _check_message(item: dict, field: str, out: list[RowViolation]) -> None:
    role = item.get("role")
    if type(role) is not str or role not in MESSAGE_ROLES:
        if role == "tool":
            fix = 'send a tool result as {"type": "function_call_output", "call_id", "output"}'
        elif role is None:
            fix = 'add "role": "user" (or assistant, system, developer)'
        else:
            fix = "use role user, assistant, system or developer"
        out.append(
            _v(f"{field}.role", f"role must be user/assistant/system/developer, got {role!r}", fix)
        )
    content = item.get("content")
    if type(content) is str:
        if role == "user" and (not content or content.isspace()):
            out.append(_v(f"{field}.content", "user message is empty", "give the prompt text"))
    elif type(content) is list:
        _check_parts(content, f"{field}.content", out)
    else:
        got = "missing" if "content" not in item else f"a {type_name(content)}"
        out.append(
            _v(
                f"{field}.content",
                f"content must be a string or a list of typed parts, got {got}",
                "give the message text as a string",
            )
        )
    if "tool_calls" in item:
        out.append(
            _v(
                f"{field}.tool_calls",
                "Gym silently drops Chat Completions `tool_calls` on a message",
                'write each call as a {"type": "function_call", "call_id", "name", "arguments"} '
                "item after the message",
            )
        )


def _require_str(item: dict, key: str, field: str, kind: str, out: list[RowViolation]) -> None:
    if type(item.get(key)) is not str:
        out.append(
            _v(f"{field}.{key}", f"a {kind} item needs a string `{key}`", f"set {key} on the item")
        )


def _check_item(item: Any, field: str, out: list[RowViolation]) -> None:
    if type(item) is not dict:
        out.append(_v(field, f"an input item must be an object, got {type_name(item)}", None))
        return
    kind = item.get("type")
    if kind is None or kind == "message":
        _check_message(item, field, out)
    elif kind == "function_call":
        for key in ("call_id", "arguments"):
            _require_str(item, key, field, kind, out)
        name = item.get("name")
        if type(name) is not str or not name:
            out.append(_v(f"{field}.name", "a function_call item needs a non-empty `name`"))
    elif kind == "function_call_output":
        _require_str(item, "call_id", field, kind, out)
        output = item.get("output")
        if type(output) is not str and type(output) is not list:
            out.append(
                _v(
                    f"{field}.output",
                    f"function_call_output needs `output` as a string, got {type_name(output)}",
                    "serialise the tool result to a string",
                )
            )
    elif kind == "reasoning":
        _require_str(item, "id", field, kind, out)
        if type(item.get("summary")) is not list:
            out.append(
                _v(
                    f"{field}.summary",
                    "a reasoning item needs a `summary` list",
                    'write "summary": [{"type": "summary_text", "text": "..."}]',
                )
            )
    elif type(kind) is not str or kind not in OTHER_ITEMS:
        out.append(
            _v(
                f"{field}.type",
                f"unknown input item type {kind!r}",
                "use message, function_call, function_call_output or reasoning",
            )
        )


def _check_tool(tool: Any, field: str, out: list[RowViolation]) -> None:
    if type(tool) is not dict:
        out.append(_v(field, f"a tool must be an object, got {type_name(tool)}"))
        return
    kind = tool.get("type")
    if kind == "function":
        if "function" in tool:
            out.append(
                _v(
                    f"{field}.function",
                    "Chat Completions tool form; Gym needs the flat Responses form",
                    'write {"type": "function", "name", "description", "parameters", '
                    '"strict"} without the nested "function"',
                )
            )
            return
        missing = [k for k in FUNCTION_TOOL_KEYS if k not in tool]
        if missing:
            out.append(
                _v(
                    field,
                    f"function tool lacks {', '.join(missing)}",
                    "a flat function tool needs type, name, parameters and strict "
                    "(parameters and strict may be null)",
                )
            )
        name = tool.get("name")
        if "name" in tool and (type(name) is not str or not name):
            out.append(_v(f"{field}.name", "tool name must be a non-empty string"))
        params = tool.get("parameters")
        if params is not None and type(params) is not dict:
            out.append(_v(f"{field}.parameters", "parameters must be a JSON Schema object or null"))
        strict = tool.get("strict")
        if strict is not None and type(strict) is not bool:
            out.append(_v(f"{field}.strict", "strict must be true, false or null"))
    elif type(kind) is not str or not kind:
        out.append(_v(f"{field}.type", "a tool needs a `type`", 'set "type": "function"'))


def _check_tools(tools: Any, out: list[RowViolation]) -> None:
    if type(tools) is not list:
        out.append(
            _v(
                "responses_create_params.tools",
                f"tools must be a list, got {type_name(tools)}",
                "write tools as a list of flat function tools",
            )
        )
        return
    for i, tool in enumerate(tools):
        # Fast path: a well-formed flat function tool (the common case) needs no more checks.
        if (
            type(tool) is dict
            and tool.get("type") == "function"
            and tool.keys() >= _FUNCTION_TOOL_KEYSET
            and "function" not in tool
        ):
            name, params, strict = tool["name"], tool["parameters"], tool["strict"]
            if (
                type(name) is str
                and name
                and (params is None or type(params) is dict)
                and (strict is None or type(strict) is bool)
            ):
                continue
        _check_tool(tool, f"responses_create_params.tools[{i}]", out)


def _unknown_field(key: str) -> RowViolation:
    close = difflib.get_close_matches(key, REQUEST_FIELDS, n=1)
    fix = (
        f"did you mean `{close[0]}`?"
        if close
        else "move it to the top level of the row (verifier fields ride there) or drop it"
    )
    return _v(
        f"responses_create_params.{key}",
        "not an OpenAI Responses request field (Gym rejects unknown keys)",
        fix,
    )


def _check_input(inp: Any, out: list[RowViolation], allow_empty_input: bool) -> None:
    if type(inp) is list:
        if not inp and not allow_empty_input:
            out.append(
                _v(
                    "responses_create_params.input",
                    "input list is empty",
                    "add the prompt; if your agent builds it from the task (as aviary or "
                    "toolsandbox do), pass the contract option allow_empty_input=true",
                )
            )
        roles = MESSAGE_ROLES
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
            _check_item(item, f"responses_create_params.input[{i}]", out)
    elif type(inp) is str:
        if not inp or inp.isspace():
            out.append(
                _v("responses_create_params.input", "input is empty", "give the prompt text")
            )
    else:
        out.append(
            _v(
                "responses_create_params.input",
                f"input must be a string or a list of items, got {type_name(inp)}",
            )
        )


def _check_request(rcp: dict, out: list[RowViolation], allow_empty_input: bool) -> None:
    scalar_types = SCALAR_TYPES
    for key, value in rcp.items():
        want = scalar_types.get(key)
        if want is not None:
            if value is not None and type(value) not in want:
                out.append(
                    _v(
                        f"responses_create_params.{key}",
                        f"expected {' or '.join(type_name(t()) for t in want)} or null, "
                        f"got {type_name(value)}",
                    )
                )
        elif key not in _STRUCTURED:
            out.append(_unknown_field(key))
    if "input" in rcp:
        _check_input(rcp["input"], out, allow_empty_input)
    else:
        out.append(
            _v(
                "responses_create_params.input",
                "input is missing",
                'add "input": [{"role": "user", "content": "..."}]',
            )
        )
    if "tools" in rcp:
        _check_tools(rcp["tools"], out)
    if "parallel_tool_calls" in rcp and type(rcp["parallel_tool_calls"]) is not bool:
        out.append(_v("responses_create_params.parallel_tool_calls", "expected true or false"))
    if "tool_choice" in rcp:
        choice = rcp["tool_choice"]
        if type(choice) is not str and type(choice) is not dict:
            out.append(
                _v(
                    "responses_create_params.tool_choice",
                    "expected auto, none, required or a tool-choice object",
                )
            )
    if rcp.get("stream") is not None and rcp.get("stream") is not False:
        out.append(
            _v(
                "responses_create_params.stream",
                "Gym only takes non-streaming requests",
                "remove stream or set it to false",
            )
        )


def nemo_gym_rows(
    default_agent_ref: Any = None,
    agent_names: Iterable[str] | None = None,
    allow_empty_input: bool = False,
) -> RowCheck:
    """Build the NeMo-Gym row check; `agent_names`, when given, are the only valid agents.

    `input: []` is an error unless `allow_empty_input` (agents that build the prompt from the
    task's own fields, e.g. Gym's aviary and toolsandbox servers, ship such rows).
    """
    names = frozenset(agent_names) if agent_names is not None else None
    agent_fix = (
        f"set agent_ref.name to one of: {', '.join(sorted(names))}"
        if names
        else "set it to the agent instance key of your Gym config"
    )

    def check_agent(row: dict, out: list[RowViolation]) -> None:
        if "agent_ref" not in row:
            if default_agent_ref is None:
                out.append(
                    RowViolation(
                        AGENT,
                        "agent_ref",
                        "agent_ref is missing",
                        'add "agent_ref": {"type": "responses_api_agents", "name": "<agent>"} '
                        "or set run.default_agent_ref in the step config",
                    )
                )
            return
        ref = row["agent_ref"]
        if type(ref) is not dict:
            out.append(
                RowViolation(
                    AGENT,
                    "agent_ref",
                    f"agent_ref must be an object, got {type_name(ref)}",
                    '{"type": "responses_api_agents", "name": "<agent>"}',
                )
            )
            return
        if "type" in ref and ref["type"] != AGENT_TYPE:
            out.append(
                RowViolation(
                    AGENT,
                    "agent_ref.type",
                    f"agent_ref.type must be {AGENT_TYPE!r}, got {ref['type']!r}",
                    f'set "type": "{AGENT_TYPE}"',
                )
            )
        name = ref.get("name")
        if type(name) is not str or not name:
            out.append(
                RowViolation(AGENT, "agent_ref.name", "agent_ref.name must be non-empty", agent_fix)
            )
        elif names is not None and name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            fix = f"did you mean `{close[0]}`?" if close else agent_fix
            out.append(
                RowViolation(
                    AGENT, "agent_ref.name", f"unknown agent {name!r} (not in the Gym config)", fix
                )
            )

    def check(row: Any) -> list[RowViolation]:
        out: list[RowViolation] = []
        if type(row) is not dict:
            out.append(_v("", f"a row must be an object, got {type_name(row)}"))
            return out
        rcp = row.get("responses_create_params")
        if type(rcp) is dict:
            _check_request(rcp, out, allow_empty_input)
        elif rcp is None and "responses_create_params" not in row:
            out.append(
                _v(
                    "responses_create_params",
                    "responses_create_params is missing",
                    'add "responses_create_params": {"input": [{"role": "user", "content": '
                    '"..."}]}',
                )
            )
        else:
            out.append(
                _v(
                    "responses_create_params",
                    f"responses_create_params must be an object, got {type_name(rcp)}",
                )
            )
        check_agent(row, out)
        return out

    return check
