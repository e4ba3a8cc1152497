"""The published JSON Schemas of the row contracts agree with the fast validators."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog.contracts import get_row_contract
from catalog.contracts.gym_facts import gym_facts
from catalog.contracts.gym_rows import scalar_types

SCHEMAS = Path(__file__).resolve().parent.parent / "catalog" / "schema" / "rows"
SCALAR_TYPES = scalar_types(gym_facts())  # the pinned Gym's, which the published schema mirrors

text = st.one_of(st.just(""), st.just("  "), st.text(min_size=1, max_size=5))
content = st.one_of(text, st.just([]), st.just([{"type": "input_text", "text": "x"}]), st.none())
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool", "robot"]), "content": content}
)
messages = st.one_of(st.lists(message, max_size=3), text, st.none())
answer = st.one_of(text, st.integers(), st.none(), st.booleans())


def _optional(d: dict) -> st.SearchStrategy:
    return st.fixed_dictionaries({}, optional=d)


binary = _optional({"prompt": st.one_of(text, messages), "chosen": answer, "rejected": answer})
completion = _optional(
    {"rank": st.one_of(st.integers(0, 1), st.text(max_size=1)), "completion": messages}
)
ranked = _optional({"context": messages, "completions": st.lists(completion, max_size=3)})
prompts = _optional({"input": answer, "output": answer, "messages": messages})


@functools.cache
def validator(contract: str) -> jsonschema.Draft202012Validator:
    """The shipped JSON Schema of a contract, read and compiled once per session."""
    schema = json.loads((SCHEMAS / f"{contract}.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def agree(contract: str, row: dict, cross_field_ok: bool = True) -> None:
    schema_ok = validator(contract).is_valid(row)
    fast_ok = not get_row_contract(contract)(row)
    if schema_ok and not cross_field_ok:
        assert not fast_ok  # the rule JSON Schema cannot state
    else:
        assert schema_ok == fast_ok, (row, get_row_contract(contract)(row))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.one_of(binary, ranked))
def test_preference_schema_and_fast_validator_agree(row):
    tie = False
    comps = row.get("completions")
    if isinstance(comps, list) and len(comps) == 2 and all(isinstance(c, dict) for c in comps):
        ranks = [c.get("rank") for c in comps]
        tie = ranks[0] == ranks[1] and isinstance(ranks[0], int)
    same = "chosen" in row and row.get("chosen") == row.get("rejected")
    agree("preference_rows", row, cross_field_ok=not (tie or same))


@settings(max_examples=200, deadline=None)
@given(prompts)
def test_verifiable_prompt_schema_and_fast_validator_agree(row):
    agree("verifiable_prompt_rows", row)


# NeMo-Gym rows. The hypothesis test mixes two generators: `gym_mixed` draws each place from
# good values (mostly) and the usual mistakes, `gym_bent` bends a valid row in one or two random
# places. Random rows rarely hold exactly one given fault, so the last test below also tries
# every single fault of one full row: that is the one that pins down each rule.
def _drop_one(strategy: st.SearchStrategy[dict], keys: list[str]) -> st.SearchStrategy[dict]:
    """Rows that sometimes lose one required key (None = keep them all)."""
    drop = st.sampled_from([None, None, None, *keys])
    return st.tuples(strategy, drop).map(lambda p: {k: v for k, v in p[0].items() if k != p[1]})


blank = st.sampled_from(["", " ", "\t\n", "\x1c", "\u3000"])  # str.isspace and \s agree here
word = st.one_of(st.sampled_from(["hi", "Solve 2+2.", "\u200b", " x "]), blank, st.text(max_size=3))
not_str = st.one_of(st.none(), st.integers(0, 2), st.booleans(), st.just([]), st.just({}))
part = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(
                ["input_text", "output_text", "refusal", "input_image", "input_file", "text", 1]
            )
        },
        optional={"text": st.one_of(word, not_str), "refusal": word, "image_url": word},
    ),
    word,
    st.none(),
)
msg_content = st.one_of(word, word, st.lists(part, max_size=2), not_str)
gym_message = _drop_one(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(
                ["user", "user", "assistant", "system", "developer", "tool", "robot", 1]
            ),
            "content": msg_content,
        },
        optional={
            "type": st.sampled_from([None, "message"]),
            "tool_calls": st.just([]),
            "status": st.just("completed"),
        },
    ),
    ["role", "content"],
)
call_item = _drop_one(
    st.fixed_dictionaries(
        {
            "type": st.just("function_call"),
            "call_id": st.one_of(word, not_str),
            "name": st.one_of(word, st.none()),
            "arguments": st.one_of(st.just('{"x": 1}'), not_str),
        }
    ),
    ["call_id", "name", "arguments"],
)
output_item = _drop_one(
    st.fixed_dictionaries(
        {
            "type": st.just("function_call_output"),
            "call_id": st.one_of(word, st.integers()),
            "output": st.one_of(word, st.just([]), st.just({}), st.none()),
        }
    ),
    ["call_id", "output"],
)
reasoning_item = _drop_one(
    st.fixed_dictionaries(
        {
            "type": st.just("reasoning"),
            "id": st.one_of(word, st.none()),
            "summary": st.one_of(st.just([]), st.just([{"type": "summary_text"}]), word),
        }
    ),
    ["id", "summary"],
)
other_item = st.fixed_dictionaries(
    {"type": st.sampled_from(["web_search_call", "mcp_call", "custom_tool_call", "tool", "", 7])}
)
gym_item = st.one_of(
    gym_message, gym_message, call_item, output_item, reasoning_item, other_item, not_str
)
gym_input = st.one_of(word, st.lists(gym_item, max_size=3), st.lists(gym_item, max_size=3), not_str)

flat_tool = _drop_one(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["function", "function", "web_search", "", None]),
            "name": st.one_of(word, st.none()),
            "parameters": st.sampled_from([None, {"type": "object"}, {}, "object", []]),
            "strict": st.sampled_from([None, True, False, 0, "true"]),
        },
        optional={"description": word, "function": st.just({"name": "f"})},
    ),
    ["type", "name", "parameters", "strict"],
)
nested_tool = st.fixed_dictionaries(
    {"type": st.just("function"), "function": st.just({"name": "f", "parameters": {}})}
)
gym_tools = st.one_of(st.lists(st.one_of(flat_tool, nested_tool, not_str), max_size=2), not_str)

scalar_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 5),
    st.floats(allow_nan=False, allow_infinity=False),
    st.just(2.0),
    word,
    st.just({}),
    st.just([]),
)
GYM_VALUES = {key: scalar_value for key in sorted(SCALAR_TYPES)} | {
    "tools": gym_tools,
    "parallel_tool_calls": st.one_of(st.booleans(), st.none(), st.just("true")),
    "tool_choice": st.one_of(st.just("auto"), st.just({"type": "function"}), not_str),
    "stream": st.sampled_from([None, False, True, "false", 1]),
    "chat_template_kwargs": st.just({}),  # not a Responses field
    "messages": st.just([]),
    "temprature": st.just(1.0),
}
# the keys a request draws besides `input`
gym_extras = st.lists(st.sampled_from(sorted(GYM_VALUES)), max_size=3, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries({k: GYM_VALUES[k] for k in keys})
)
gym_request = st.one_of(
    st.tuples(st.fixed_dictionaries({"input": gym_input}), gym_extras).map(lambda p: p[0] | p[1]),
    gym_extras,
    not_str,
)
GOOD = st.sampled_from(["hi", "Solve 2+2.", " x ", "\u200b", "\u00e9t\u00e9"])
good_part = st.one_of(
    st.fixed_dictionaries({"type": st.just("input_text"), "text": GOOD}),
    st.just({"type": "input_image", "image_url": "https://example.com/a.png"}),
)
output_part = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("output_text"), "text": GOOD, "annotations": st.just([])}
    ),
    st.just({"type": "refusal", "refusal": "no"}),
)
# a replayed assistant turn: Gym's output message
good_output = st.fixed_dictionaries(
    {
        "id": st.just("msg_1"),
        "role": st.just("assistant"),
        "content": st.lists(output_part, min_size=1, max_size=2),
    },
    optional={"type": st.just("message"), "status": st.just("completed")},
)
good_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system", "developer"]),
        "content": st.one_of(GOOD, st.lists(good_part, min_size=1, max_size=2)),
    },
    optional={"type": st.just("message"), "status": st.just("completed")},
)
good_item = st.one_of(
    good_message,
    good_message,
    good_output,
    st.just({"role": "assistant", "content": ""}),
    st.fixed_dictionaries(
        {
            "type": st.just("function_call"),
            "call_id": GOOD,
            "name": st.sampled_from(["calc", "f"]),
            "arguments": st.just('{"a": 1}'),
        }
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("function_call_output"),
            "call_id": GOOD,
            "output": st.one_of(GOOD, st.just([{"type": "input_text", "text": "4"}])),
        }
    ),
    st.just(
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s"}]}
    ),
    st.fixed_dictionaries({"type": st.sampled_from(["web_search_call", "mcp_call"])}),
)
good_tool = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("function"),
            "name": st.sampled_from(["calc", "f"]),
            "parameters": st.sampled_from([None, {"type": "object", "properties": {}}]),
            "strict": st.sampled_from([None, True, False]),
        },
        optional={"description": GOOD},
    ),
    st.just({"type": "web_search"}),
)
maybe_text = st.one_of(GOOD, st.none())
GOOD_VALUES = {
    "temperature": st.sampled_from([0.7, 1, None]),
    "top_p": st.sampled_from([0.95, None]),
    "max_output_tokens": st.sampled_from([512, None]),
    "max_tool_calls": st.sampled_from([3, None]),
    "top_logprobs": st.just(0),
    "instructions": maybe_text,
    "model": maybe_text,
    "previous_response_id": maybe_text,
    "user": maybe_text,
    "background": st.sampled_from([False, None]),
    "store": st.sampled_from([True, None]),
    "metadata": st.just({"k": "v"}),
    "reasoning": st.just({"effort": "low"}),
    "text": st.just({"format": {"type": "text"}}),
    "prompt": st.none(),
    "include": st.just(["reasoning.encrypted_content"]),
    "tools": st.lists(good_tool, max_size=2),
    "parallel_tool_calls": st.booleans(),
    "tool_choice": st.sampled_from(["auto", {"type": "function", "name": "calc"}]),
    "stream": st.sampled_from([None, False]),
}
good_request = st.fixed_dictionaries(
    {"input": st.one_of(GOOD, st.lists(good_item, min_size=1, max_size=4))}, optional=GOOD_VALUES
)
good_agent = st.fixed_dictionaries(
    {"name": st.sampled_from(["math_agent", "a"])},
    optional={"type": st.just("responses_api_agents")},
)
valid_gym_row = st.fixed_dictionaries(
    {
        "responses_create_params": good_request,
        "agent_ref": good_agent,
    },
    optional={"expected_answer": st.just("4"), "verifier_metadata": st.just({"t": [1, None]})},
)
agent_ref = st.sampled_from(
    [
        {"type": "responses_api_agents", "name": "math_agent"},
        {"type": "responses_api_agents", "name": "math_agent"},
        {"name": "math_agent"},
        {"name": "math_agent", "extra": 1},
        {"type": "responses_api_agents", "name": ""},
        {"type": "resources_servers", "name": "math_agent"},
        {"type": None, "name": "math_agent"},
        {"name": 3},
        {},
        "math_agent",
        None,
    ]
)


def _mostly(good: st.SearchStrategy, bad: st.SearchStrategy) -> st.SearchStrategy:
    """Good three times in four, so a row often has just one fault."""
    return st.one_of(good, good, good, bad)


mixed_item = _mostly(good_item, gym_item)
mixed_extras = st.lists(st.sampled_from(sorted(GYM_VALUES)), max_size=3, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries(
        {
            k: _mostly(GOOD_VALUES[k], GYM_VALUES[k]) if k in GOOD_VALUES else GYM_VALUES[k]
            for k in keys
        }
    )
)
mixed_input = _mostly(st.one_of(GOOD, st.lists(mixed_item, min_size=1, max_size=3)), gym_input)
mixed_request = _mostly(
    st.tuples(st.fixed_dictionaries({"input": mixed_input}), mixed_extras).map(
        lambda p: p[0] | p[1]
    ),
    gym_request,
)
gym_mixed = st.fixed_dictionaries(
    {"responses_create_params": mixed_request, "agent_ref": _mostly(good_agent, agent_ref)},
    optional={"expected_answer": st.just("4")},
)


# What a bend puts in place of a value, and the keys it may add to an object.
odd = st.one_of(
    st.sampled_from(["", " ", "\u3000", "\x1c", [], {}, None, True, False, 0, 1, 2.0, 2.5]),
    st.sampled_from(["tool", "text", "message", "function", "function_call", "user", "refusal"]),
    st.text(max_size=2),
)
odd_key = st.sampled_from(
    ["tool_calls", "function", "messages", "chat_template_kwargs", "stream", "type", "role", "x"]
)


def _objects(value):
    """Every object inside a JSON value, the value itself first."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _objects(v)
    elif isinstance(value, list):
        for v in value:
            yield from _objects(v)


@st.composite
def gym_bent(draw) -> dict:
    """A valid row with up to two objects in it given an odd value, one key fewer or one more."""
    row = copy.deepcopy(draw(valid_gym_row))  # st.just values are shared objects
    for _ in range(draw(st.integers(0, 2))):
        obj = draw(st.sampled_from(list(_objects(row))))
        how = draw(st.sampled_from(["replace", "delete", "add"]))
        if how == "add" or not obj:
            obj[draw(odd_key)] = draw(odd)
        else:
            key = draw(st.sampled_from(sorted(obj)))
            if how == "replace":
                obj[key] = draw(odd)
            else:
                del obj[key]
    return row


INTEGER_FIELDS = [
    k for k, want in SCALAR_TYPES.items() if want and int in want and float not in want
]


def _integral_float(row: dict) -> bool:
    """JSON Schema counts 1.0 as an integer; the fast validator (which decides) does not."""
    rcp = row.get("responses_create_params")
    return isinstance(rcp, dict) and any(
        type(rcp.get(k)) is float and rcp[k].is_integer() for k in INTEGER_FIELDS
    )


@settings(max_examples=400, deadline=None)
@given(st.one_of(gym_bent(), gym_mixed))
def test_nemo_gym_schema_and_fast_validator_agree(row):
    agree("nemo_gym_rows", row, cross_field_ok=not _integral_float(row))


def _gym_row(**request) -> dict:
    return {"responses_create_params": {"input": "hi", **request}, "agent_ref": {"name": "a"}}


@pytest.mark.parametrize("key", ["service_tier", "truncation"])
def test_gym_service_tier_and_truncation_are_request_fields(key):
    agree("nemo_gym_rows", _gym_row(**{key: "auto"}))


def test_gym_stream_zero_is_not_false():
    agree("nemo_gym_rows", _gym_row(stream=0))


# Every single fault of one full valid row: each value in it replaced by each of these, each key
# dropped, each object given each of these keys.
GYM_ROW = {
    "responses_create_params": {
        "input": [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": ""},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is 2+2?"},
                    {"type": "input_image", "image_url": "https://example.com/a.png"},
                ],
            },
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s"}]},
            {"type": "function_call", "call_id": "c1", "name": "calc", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "4"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {
                "id": "msg_1",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "4", "annotations": []},
                    {"type": "refusal", "refusal": "no"},
                ],
            },
        ],
        "tools": [
            {"type": "function", "name": "calc", "parameters": {"type": "object"}, "strict": True},
            {"type": "web_search"},
        ],
        "temperature": 0.7,
        "top_p": 1,
        "max_output_tokens": 512,
        "max_tool_calls": 2,
        "top_logprobs": 0,
        "instructions": "x",
        "model": "m",
        "previous_response_id": "r",
        "user": "u",
        "background": False,
        "store": True,
        "metadata": {"k": "v"},
        "reasoning": {"effort": "low"},
        "text": {"format": {"type": "text"}},
        "prompt": None,
        "include": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "stream": False,
    },
    "agent_ref": {"type": "responses_api_agents", "name": "math_agent"},
    "expected_answer": "4",
}
ODD_VALUES = [
    *["", " ", "\u3000", "\x1c", "\u200b", "x", None, True, False, 0, 1, 2.0, 2.5, [], {}],
    *[[{}], ["x"], [{"type": "input_text", "text": "x"}], [{"type": "text", "text": "x"}]],
    *["user", "tool", "text", "input_text", "refusal", "function", "responses_api_agents"],
    *["message", "function_call", "function_call_output", "reasoning", "mcp_call", "Message"],
]
ODD_KEYS = ["tool_calls", "function", "role", "content", "type", "name", "chat_template_kwargs"]


def _single_faults(value):
    """Yield (apply, undo) for every single change to `value` (changed in place)."""
    entries = value.items() if isinstance(value, dict) else enumerate(value)
    for key, old in list(entries):
        for new in ODD_VALUES:
            yield (
                lambda k=key, n=new: value.__setitem__(k, n),
                lambda k=key, o=old: value.__setitem__(k, o),
            )
        yield from _single_faults(old) if isinstance(old, (dict, list)) else ()
    if isinstance(value, dict):
        for key in list(value):
            old = value[key]
            yield lambda k=key: value.pop(k), lambda k=key, o=old: value.__setitem__(k, o)
        for key in ODD_KEYS:
            if key not in value:
                yield lambda k=key: value.__setitem__(k, []), lambda k=key: value.pop(k)


@pytest.mark.slow  # every single fault of a full row: about 1,500 jsonschema validations
def test_nemo_gym_schema_and_fast_validator_agree_on_every_single_fault():
    schema = jsonschema.Draft202012Validator(
        json.loads((SCHEMAS / "nemo_gym_rows.schema.json").read_text())
    )
    check = get_row_contract("nemo_gym_rows")
    row = copy.deepcopy(GYM_ROW)
    assert check(row) == [] and schema.is_valid(row)
    disagree, n = [], 0
    for apply, undo in _single_faults(row):
        apply()
        if not _integral_float(row):
            n += 1
            if schema.is_valid(row) != (not check(row)):
                disagree.append(copy.deepcopy(row))
        undo()
    assert row == GYM_ROW
    assert n > 1500 and not disagree, disagree[:3]
