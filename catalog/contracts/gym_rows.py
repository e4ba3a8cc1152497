"""NeMo-Gym rows: `responses_create_params` (an OpenAI Responses request) plus `agent_ref`.

The Gym that will run judges the request (gym_facts.py; the pin unless told otherwise): its
`NeMoGymResponseCreateParamsNonStreaming` forbids unknown keys and requires only `input`;
tools use the flat Responses form; the input items are gym_items.py's. Findings that depend on
the Gym version name it. Upstream reads only `agent_ref.name` to route a row, so a missing
`agent_ref.type` is accepted; a wrong one is not. The task fields a row's agent routes it to
(gym_routes.py: the fields its resource server's verify model reads) are checked with pydantic's
lax coercions, so a value pydantic would take is never refused (E-GYM-TASK-FIELD).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

from catalog.contracts.gym_facts import GymFacts, gym_facts, pinned_routes
from catalog.contracts.gym_items import check_input
from catalog.contracts.gym_items import violation as _v
from catalog.contracts.rows import RowCheck, RowViolation, add, type_name
from catalog.did_you_mean import close_matches

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
            is_, it = ("is", "it") if len(missing) == 1 else ("are", "them")
            add(
                TASK_FIELD,
                out,
                ", ".join(missing),
                f"{names} {is_} missing: agent `{agent}` routes the row to resource server "
                f"`{server}`, whose verify request requires {it}",
                f"give each row {names.replace(', ', ' and ')} (in an rl_prep blend, map source "
                f"fields onto {it}), or route the rows to an agent whose server does not need {it}",
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


AGENT = "E-GYM-AGENT-REF"
_agent = partial(add, AGENT)  # a fault of the row's agent_ref, appended
NOT_LOADED = "E-GYM-AGENT"
AGENT_TYPE = "responses_api_agents"
FUNCTION_TOOL_KEYS = ("type", "name", "parameters", "strict")
# Request fields with checks of their own; the others are checked by their JSON type.
STRUCTURED = frozenset({"input", "tools", "parallel_tool_calls", "tool_choice", "stream"})
_FUNCTION_TOOL_KEYSET = frozenset(FUNCTION_TOOL_KEYS)


def scalar_types(facts: GymFacts) -> dict[str, tuple[type, ...] | None]:
    """The request fields checked by JSON type, and the Python types their values may have
    (None: any value). The structured fields are checked one by one instead."""
    out: dict[str, tuple[type, ...] | None] = {}
    for key, kinds in facts.request_fields.items():
        if key not in STRUCTURED:
            out[key] = None if kinds is None else tuple(t for k in kinds for t in PY_TYPES[k])
    return out


def _check_tool(tool: Any, field: str, label: str, out: list[RowViolation]) -> None:
    if type(tool) is not dict:
        _v(out, field, f"a tool must be an object, got {type_name(tool)}")
        return
    kind = tool.get("type")
    if kind == "function":
        if "function" in tool:
            _v(
                out,
                f"{field}.function",
                f"Chat Completions tool form; {label} needs the flat Responses form",
                'write {"type": "function", "name", "description", "parameters", '
                '"strict"} without the nested "function"',
            )
            return
        missing = [k for k in FUNCTION_TOOL_KEYS if k not in tool]
        if missing:
            _v(
                out,
                field,
                f"function tool lacks {', '.join(missing)}",
                "a flat function tool needs type, name, parameters and strict "
                "(parameters and strict may be null)",
            )
        name = tool.get("name")
        if "name" in tool and (type(name) is not str or not name):
            _v(out, f"{field}.name", "tool name must be a non-empty string")
        params = tool.get("parameters")
        if params is not None and type(params) is not dict:
            _v(out, f"{field}.parameters", "parameters must be a JSON Schema object or null")
        strict = tool.get("strict")
        if strict is not None and type(strict) is not bool:
            _v(out, f"{field}.strict", "strict must be true, false or null")
        description = tool.get("description")
        if description is not None and type(description) is not str:
            _v(out, f"{field}.description", "description must be a string or null")
    elif type(kind) is not str or not kind:
        _v(out, f"{field}.type", "a tool needs a `type`", 'set "type": "function"')


def _check_tools(tools: Any, label: str, out: list[RowViolation]) -> None:
    if type(tools) is not list:
        said = f"tools must be a list, got {type_name(tools)}"
        fix = "write tools as a list of flat function tools"
        _v(out, "responses_create_params.tools", said, fix)
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
            description = tool.get("description")
            if (
                type(name) is str
                and name
                and (params is None or type(params) is dict)
                and (strict is None or type(strict) is bool)
                and (description is None or type(description) is str)
            ):
                continue
        _check_tool(tool, f"responses_create_params.tools[{i}]", label, out)


class _Request:
    """The request checks of one Gym, with its facts looked up once."""

    def __init__(self, facts: GymFacts, allow_empty_input: bool) -> None:
        self.label = facts.label
        self.known = facts.request_fields
        self.scalars = scalar_types(facts)
        self.facts = facts
        self.allow_empty_input = allow_empty_input

    def check(self, rcp: dict, out: list[RowViolation]) -> None:
        known, scalars = self.known, self.scalars
        for key, value in rcp.items():
            if key not in known:
                close = close_matches(key, known, n=1)
                move = "move it to the top level of the row (verifier fields ride there) or drop it"
                fix = f"did you mean `{close[0]}`?" if close else move
                said = f"not a request field of {self.label} (it rejects unknown keys)"
                _v(out, f"responses_create_params.{key}", said, fix)
                continue
            want = scalars.get(key)
            if want is not None and type(value) not in want:
                kinds = " or ".join(sorted(known[key] or ()))
                said = f"expected {kinds}, got {type_name(value)}"
                _v(out, f"responses_create_params.{key}", said)
        if "input" in rcp:
            check_input(rcp["input"], self.facts, out, self.allow_empty_input)
        else:
            _v(
                out,
                "responses_create_params.input",
                "input is missing",
                'add "input": [{"role": "user", "content": "..."}]',
            )
        if "tools" in rcp and "tools" in known:
            _check_tools(rcp["tools"], self.label, out)
        choice = rcp.get("parallel_tool_calls", False)
        if type(choice) is not bool and "parallel_tool_calls" in known:
            _v(out, "responses_create_params.parallel_tool_calls", "expected true or false")
        choice = rcp.get("tool_choice", "auto")
        if type(choice) is not str and type(choice) is not dict and "tool_choice" in known:
            said = "expected auto, none, required or a tool-choice object"
            _v(out, "responses_create_params.tool_choice", said)
        stream = rcp.get("stream")
        if stream is not None and stream is not False and "stream" in known:
            said = f"{self.label} only takes non-streaming requests"
            _v(out, "responses_create_params.stream", said, "remove stream or set it to false")


def nemo_gym_rows(
    default_agent_ref: Any = None,
    agent_names: Iterable[str] | None = None,
    allow_empty_input: bool = True,
    gym_version: str | None = None,
    routes: dict[str, Any] | None = None,
) -> RowCheck:
    """Build the NeMo-Gym row check; `agent_names`, when given, are the only valid agents.

    `gym_version` names the judging Gym (a version or a source folder; None: the pin).
    `input: []` is legal, as in Gym (agents such as aviary and toolsandbox build the prompt
    from the task's own fields); `allow_empty_input=false` makes it an error. `routes`: agent
    -> its server's task fields (gym_routes.GymRoutes.option); None: the pinned Gym's.
    """
    request = _Request(gym_facts(gym_version), allow_empty_input)
    names = frozenset(agent_names) if agent_names is not None else None
    task = TaskFields(pinned_routes() if routes is None else routes)
    default_name = (
        default_agent_ref.get("name") if isinstance(default_agent_ref, dict) else default_agent_ref
    )
    agent_fix = (
        f"set agent_ref.name to one of: {', '.join(sorted(names))}"
        if names
        else "set it to the agent instance key of your Gym config"
    )
    load_fix = (
        "add the Gym config that defines it to env.nemo_gym.config_paths, or "
        + agent_fix.replace("set it", "set agent_ref.name", 1)
    )

    def check_agent(row: dict, out: list[RowViolation]) -> None:
        if "agent_ref" not in row:
            if type(default_name) is str:
                task.check(row, default_name, out)
            if default_agent_ref is None:
                _agent(
                    out,
                    "agent_ref",
                    "agent_ref is missing",
                    'add "agent_ref": {"type": "responses_api_agents", "name": "<agent>"} '
                    "or set run.default_agent_ref in the step config",
                )
            return
        ref = row["agent_ref"]
        if type(ref) is not dict:
            said = f"agent_ref must be an object, got {type_name(ref)}"
            _agent(out, "agent_ref", said, '{"type": "responses_api_agents", "name": "<agent>"}')
            return
        if "type" in ref and ref["type"] != AGENT_TYPE:
            said = f"agent_ref.type must be {AGENT_TYPE!r}, got {ref['type']!r}"
            _agent(out, "agent_ref.type", said, f'set "type": "{AGENT_TYPE}"')
        name = ref.get("name")
        if type(name) is not str or not name:
            _agent(out, "agent_ref.name", "agent_ref.name must be non-empty", agent_fix)
        elif names is not None and name not in names:
            close = close_matches(name, names, n=1)
            fix = f"did you mean `{close[0]}`?" if close else load_fix
            said = (
                f"agent {name!r} is not loaded by the config (no file in "
                "env.nemo_gym.config_paths defines it)"
            )
            add(NOT_LOADED, out, "agent_ref.name", said, fix)
        else:
            task.check(row, name, out)

    def check(row: Any) -> list[RowViolation]:
        out: list[RowViolation] = []
        if type(row) is not dict:
            _v(out, "", f"a row must be an object, got {type_name(row)}")
            return out
        rcp = row.get("responses_create_params")
        if type(rcp) is dict:
            request.check(rcp, out)
        elif rcp is None and "responses_create_params" not in row:
            said = "responses_create_params is missing"
            fix = 'add "responses_create_params": {"input": [{"role": "user", "content": "..."}]}'
            _v(out, "responses_create_params", said, fix)
        else:
            said = f"responses_create_params must be an object, got {type_name(rcp)}"
            _v(out, "responses_create_params", said)
        check_agent(row, out)
        return out

    return check
