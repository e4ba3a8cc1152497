"""A msgspec decoder that accepts, in C, the NeMo-Gym rows that are certainly valid.

`nemo_gym_rows` (gym_rows.py) is the contract: it decides and explains every row. Checking a
parsed dict in Python costs about as much as parsing it, so `validate` and rl_prep first try
this typed decoder on the raw line: it builds no objects for the fields it does not check
(verifier fields, tool parameter schemas, reasoning summaries) and fails on anything outside a
strict, common shape. A row it accepts passes the contract (tests/test_contracts_gym_fast.py
checks this on generated rows, for each shipped Gym version); a row it refuses goes to the
contract, which has the last word. The shape uses only request fields, item types, roles and
parts every supported Gym has; for a Gym that lacks one (`_covered`), the pre-filter is off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, TypeVar, cast

import msgspec
from msgspec import UNSET, Meta, Raw, Struct, UnsetType

from catalog.contracts.gym_facts import GymFacts, gym_facts, pinned_routes

Accept = Callable[[bytes], bool]
NonBlank = Annotated[str, Meta(pattern=r"\S")]
NonEmpty = Annotated[str, Meta(min_length=1)]


class _Part(Struct, forbid_unknown_fields=True):
    type: Literal["input_text"]  # output parts need an output message: the contract checks it
    text: str


class _Summary(Struct):
    type: Literal["summary_text"]
    text: str


class _Item(Struct, forbid_unknown_fields=True):
    """Any of message / function_call / function_call_output / reasoning, all fields
    optional; `_items_ok` checks what each kind requires."""

    type: Literal["message", "function_call", "function_call_output", "reasoning"] | None = None
    role: Literal["user", "assistant", "system", "developer"] | None = None
    content: str | Annotated[list[_Part], Meta(min_length=1)] | None = None
    status: str | None = None
    id: str | None = None
    call_id: str | None = None
    name: NonEmpty | None = None
    arguments: str | None = None
    output: str | list[Raw] | None = None
    summary: list[_Summary] | None = None


class _Tool(Struct, forbid_unknown_fields=True):
    type: Literal["function"]
    name: NonEmpty
    parameters: dict[str, Raw] | None
    strict: bool | None
    description: str | None = None


class _Request(Struct, forbid_unknown_fields=True):
    input: NonBlank | list[_Item]
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    instructions: str | None = None
    model: str | None = None
    metadata: dict[str, Raw] | None = None
    tools: list[_Tool] = []  # an explicit null is an error
    parallel_tool_calls: bool = False
    tool_choice: str | dict[str, Raw] = "auto"


class _AgentRef(Struct, forbid_unknown_fields=True):
    name: NonEmpty
    type: Literal["responses_api_agents"] = "responses_api_agents"


class _Row(Struct):
    responses_create_params: _Request
    agent_ref: _AgentRef


class _RowDefaultAgent(Struct):
    responses_create_params: _Request
    agent_ref: _AgentRef | UnsetType = UNSET  # an explicit null is an error


def _items_ok(items: list[Any], allow_empty_input: bool) -> bool:
    """What the struct cannot state: the fields each item kind requires."""
    if not items:
        return allow_empty_input
    for item in items:
        kind = item.type
        if kind is None or kind == "message":
            role = item.role
            content = item.content
            if role is None or content is None or item.name is not None:
                return False
            if role == "user" and type(content) is str and (not content or content.isspace()):
                return False
        elif kind == "function_call":
            if item.call_id is None or item.arguments is None or item.name is None:
                return False
        elif kind == "function_call_output":
            if item.call_id is None or item.output is None:
                return False
        elif item.id is None or item.summary is None:  # reasoning
            return False
    return True


# What the structs above take: each request field with the JSON types its value may have,
# the item types and roles of `_Item`, and the part types of `_Part`.
FAST_FIELDS = {
    "input": {"string", "array"},
    "temperature": {"number", "null"},
    "top_p": {"number", "null"},
    "max_output_tokens": {"integer", "null"},
    "max_tool_calls": {"integer", "null"},
    "instructions": {"string", "null"},
    "model": {"string", "null"},
    "metadata": {"object", "null"},
    "tools": {"array"},
    "parallel_tool_calls": {"boolean"},
    "tool_choice": {"string", "object"},
}
FAST_ITEMS = frozenset({"message", "function_call", "function_call_output", "reasoning"})
FAST_ROLES = frozenset({"user", "assistant", "system", "developer"})
FAST_PARTS = frozenset({"input_text"})


def _covered(facts: GymFacts) -> bool:
    """True when the Gym takes everything the structs take (so an accepted row passes)."""
    for key, kinds in FAST_FIELDS.items():
        if key not in facts.request_fields:
            return False
        known = facts.request_fields[key]
        if known is not None and not kinds <= known:
            return False
    return (
        (facts.item_types is None or facts.item_types >= FAST_ITEMS)
        and facts.message_roles >= FAST_ROLES
        and (facts.content_parts is None or facts.content_parts >= FAST_PARTS)
    )


# The first byte of a JSON value of each type (a Raw field's type, read without parsing it).
_FIRST = {
    "string": b'"',
    "object": b"{",
    "array": b"[",
    "boolean": b"tf",
    "null": b"n",
    "number": b"-0123456789",
}
# Task-field types msgspec checks in C when every routed agent gives a field the same types.
_TYPED: dict[str, Any] = {"string": str, "integer": int, "boolean": bool, "null": None}


def _field_type(kinds: list[str] | None) -> Any:
    """The struct type of a task field every agent types alike: its Python types, or Raw."""
    if not kinds or any(k not in _TYPED for k in kinds):
        return Raw
    out: Any = None
    for k in kinds:
        out = _TYPED[k] if out is None else out | _TYPED[k]
    return out


_R = TypeVar("_R", bound=Struct)


def _task_struct(base: type[_R], routes: dict[str, Any]) -> tuple[type[_R], dict[str, tuple]]:
    """`base` plus every task field of `routes` (UNSET when absent), and per agent the
    attributes its server requires and the Raw ones to type-check here: (attribute, first
    bytes of its JSON types, whether an integer is taken). A field typed alike by every agent
    is decoded typed (msgspec checks it; and its presence, when every agent requires it); any
    other stays Raw (its type is the agent's)."""
    specs = [(r.get("fields") or {}) for r in routes.values()]
    names = sorted({k for fields in specs for k in fields})
    attr = {name: f"f{i}" for i, name in enumerate(names)}
    typed: dict[str, Any] = {}
    always: set[str] = set()  # required alike by every agent: a struct field without default
    for n in names:
        kinds = [fields[n].get("types") for fields in specs if n in fields]
        same = len(kinds) == len(specs) and all(k == kinds[0] for k in kinds)
        typed[n] = _field_type(kinds[0]) if same else Raw
        if same and all(fields[n].get("required") for fields in specs):
            always.add(n)
    struct = msgspec.defstruct(
        "_TaskRow",
        [(attr[n], typed[n]) if n in always else (attr[n], typed[n] | UnsetType, UNSET)
         for n in names],
        bases=(base,),
        kw_only=True,
        rename={attr[n]: n for n in names} | {f: f for f in base.__struct_fields__},
    )  # fmt: skip
    per_agent: dict[str, tuple] = {}
    for agent, route in routes.items():
        fields = route.get("fields") or {}
        required = tuple(
            attr[k] for k, spec in fields.items() if spec.get("required") and k not in always
        )
        raws = tuple(
            (attr[k], frozenset(b"".join(_FIRST.get(t, b"") for t in spec["types"])),
             "integer" in spec["types"])
            for k, spec in fields.items()
            if typed[k] is Raw and spec.get("types")
        )  # fmt: skip
        per_agent[agent] = (required, raws)
    return cast("type[_R]", struct), per_agent  # a subclass of `base`


_NOTHING = ((), ())  # an agent whose fields msgspec checked entirely


def _task_ok(row: Any, required: tuple, raws: tuple) -> bool:
    for attr in required:
        if getattr(row, attr) is UNSET:
            return False
    for attr, first, integer in raws:
        raw = getattr(row, attr)
        if (
            raw is not UNSET
            and memoryview(raw)[0] not in first
            and not (integer and bytes(raw).lstrip(b"-").isdigit())
        ):
            return False
    return True


def gym_accept(
    default_agent_ref: Any = None,
    agent_names: Iterable[str] | None = None,
    allow_empty_input: bool = True,
    gym_version: str | None = None,
    routes: dict[str, Any] | None = None,
) -> Accept | None:
    """`accept(line) -> True` only for rows `nemo_gym_rows(same options)` finds no fault in;
    None when the judging Gym lacks part of the shape the structs take."""
    if not _covered(gym_facts(gym_version)):
        return None
    row_type: type[_Row | _RowDefaultAgent] = (
        _Row if default_agent_ref is None else _RowDefaultAgent
    )
    if routes is None:  # as nemo_gym_rows: no Gym tree decided them, the pinned Gym's
        return _pinned_accept(default_agent_ref, agent_names, allow_empty_input, gym_version)
    task: dict[str, tuple] = {}
    if routes:
        row_type, task = _task_struct(row_type, routes)
    decode = msgspec.json.Decoder(row_type).decode
    names = frozenset(agent_names) if agent_names is not None else None
    default = default_agent_ref.get("name") if isinstance(default_agent_ref, dict) else None
    failure = (msgspec.DecodeError, ValueError, RecursionError)  # ValueError: not UTF-8

    def accept(line: bytes) -> bool:
        # msgspec skips the fields it does not check without reading their UTF-8
        if not line.isascii():
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return False
        try:
            row = decode(line)
        except failure:
            return False
        inp = row.responses_create_params.input
        if type(inp) is list and not _items_ok(inp, allow_empty_input):
            return False
        ref = row.agent_ref
        name = default if ref is UNSET else ref.name
        if names is not None and ref is not UNSET and name not in names:
            return False
        spec = task.get(name) if task and name is not None else None
        return spec is None or spec == _NOTHING or _task_ok(row, *spec)

    return accept


class _AgentName(Struct):
    name: str | UnsetType = UNSET


class _AgentOnly(Struct):
    agent_ref: _AgentName | UnsetType = UNSET  # any other shape: the row's check decides


def _pinned_accept(
    default_agent_ref: Any, agent_names: Any, allow_empty_input: bool, gym_version: str | None
) -> Accept | None:
    """`gym_accept` with the pinned Gym's routes (gym_facts.pinned_routes), one agent's at a time: a
    struct of every pinned server's fields (some 180) would double the cost of each row. The
    last agent's own accept (its name the only one taken) tries first, as a file's rows mostly
    share one agent; else the row's agent is read and its accept, built once, decides."""
    pinned = pinned_routes()
    default = default_agent_ref.get("name") if isinstance(default_agent_ref, dict) else None
    plain = gym_accept(default_agent_ref, agent_names, allow_empty_input, gym_version, {})
    if plain is None:
        return None
    names = frozenset(agent_names) if agent_names is not None else None
    own: dict[str, Accept] = {}
    agent_of = msgspec.json.Decoder(_AgentOnly).decode
    last: list[Accept] = []

    def of(name: str) -> Accept:
        if name not in own:
            only = [name] if names is None or name in names else []
            built = gym_accept(default_agent_ref, only, allow_empty_input, gym_version,
                               {name: pinned[name]})  # fmt: skip
            own[name] = built or (lambda line: False)
        return own[name]

    def accept(line: bytes) -> bool:
        if last and last[0](line):
            return True
        try:
            ref = agent_of(line).agent_ref
        except (msgspec.DecodeError, ValueError, RecursionError):
            return False
        name = default if ref is UNSET else ref.name
        if type(name) is not str or name not in pinned:
            return plain(line)
        if default is None or default == name:  # rows without agent_ref are not taken as its
            last[:] = [of(name)]
        return of(name)(line)

    return accept
