"""The NeMo-Gym fast pre-filter never accepts a row the contract rejects, under each shipped Gym
version's vocabulary, and takes the common rows (so `validate` and rl_prep skip the dict parse
for them)."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.contracts import get_row_contract

AGENTS = ["math_agent", "code_agent"]
GYM_VERSIONS = [None, "0.7.0"]  # the pin and the newest supported release
OPTIONS = [
    {**options, "gym_version": version}
    for version in GYM_VERSIONS
    for options in (
        {},
        {"agent_names": AGENTS},
        {"default_agent_ref": {"type": "responses_api_agents", "name": "math_agent"}},
        {"allow_empty_input": False},
    )
]


def _some(required: dict, optional: dict) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(required, optional=optional)


# Valid rows first; then each example bends at most a few places (see `bends`).
words = st.sampled_from(["x", " hi ", "Solve 2+2.", "\u00e9t\u00e9"])
part = st.fixed_dictionaries(
    {"type": st.sampled_from(["input_text", "output_text"]), "text": words}
)
message = _some(
    {
        "role": st.sampled_from(["user", "assistant", "system", "developer"]),
        "content": st.one_of(words, st.lists(part, min_size=1, max_size=2)),
    },
    {"type": st.just("message"), "status": words, "id": words},
)
call = _some(
    {"type": st.just("function_call"), "call_id": words, "name": words, "arguments": words}, {}
)
output = st.fixed_dictionaries(
    {"type": st.just("function_call_output"), "call_id": words, "output": words}
)
summary = st.lists(st.fixed_dictionaries({"type": st.just("summary_text"), "text": words}))
reasoning = st.fixed_dictionaries({"type": st.just("reasoning"), "id": words, "summary": summary})
item = st.one_of(message, call, output, reasoning)
tool = _some(
    {
        "type": st.just("function"),
        "name": words,
        "parameters": st.one_of(st.none(), st.just({"type": "object", "properties": {}})),
        "strict": st.one_of(st.booleans(), st.none()),
    },
    {"description": words},
)
request = _some(
    {"input": st.one_of(st.lists(item, min_size=1, max_size=4), words)},
    {
        "temperature": st.sampled_from([0.7, 1, None]),
        "max_output_tokens": st.sampled_from([512, None]),
        "tools": st.lists(tool, max_size=2),
        "parallel_tool_calls": st.booleans(),
        "tool_choice": st.sampled_from(["auto", {"type": "function", "name": "f"}]),
        "stream": st.sampled_from([False, None]),
        "metadata": st.just({"k": "v"}),
        "prompt_cache_key": words,  # a request field since Gym 0.7.0
    },
)
agent = _some({"name": st.sampled_from(AGENTS)}, {"type": st.just("responses_api_agents")})
valid_row = _some(
    {"responses_create_params": request, "agent_ref": agent},
    {"expected_answer": words, "verifier_metadata": st.just({"tests": [1, {"a": None}]})},
)
# Values that break (or only bend) whatever they replace.
odd = st.one_of(
    st.sampled_from(["", " ", "\t\n", "\u3000", "\x1c", [], {}, None, True, 0, 1.0, 2.5]),
    st.sampled_from(["tool", "text", "message", "mesage", "function", "agents", "math_agnet"]),
    st.text(max_size=3),
)
# Keys a bend may add where they do not belong (or do).
odd_key = st.sampled_from(["tool_calls", "function", "messages", "stream", "name", "type", "x"])


def _paths(value):
    """Every (container, key) inside a JSON value, to pick one to bend."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield value, k
            yield from _paths(v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield value, i
            yield from _paths(v)


@st.composite
def bent_row(draw) -> dict:
    """A valid row with up to three places replaced, deleted or given an extra key."""
    row = copy.deepcopy(draw(valid_row))  # st.just values are shared objects
    for _ in range(draw(st.integers(0, 3))):
        places = list(_paths(row))
        if not places:
            break
        container, key = draw(st.sampled_from(places))
        how = draw(st.sampled_from(["replace", "delete", "add"]))
        if how == "replace":
            container[key] = copy.deepcopy(draw(odd))
        elif how == "delete":
            del container[key]
        elif isinstance(container[key], dict):
            container[key][draw(odd_key)] = copy.deepcopy(draw(odd))
    return row


row = bent_row()


@pytest.mark.slow  # 600 generated rows
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row=row, options=st.sampled_from(OPTIONS))
def test_an_accepted_line_is_a_row_the_contract_passes(row, options):
    contract = get_row_contract("nemo_gym_rows", **options)
    line = json.dumps(row).encode()
    if contract.accept(line):
        assert contract.check(row) == []


def gym_row(**rcp_extra) -> dict:
    items = [
        {"role": "system", "content": "You are a careful solver."},
        {"role": "user", "content": "What is 2+2?"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s"}]},
        {"type": "function_call", "call_id": "c1", "name": "calc", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "4"},
        {"role": "assistant", "content": ""},
        {"role": "user", "type": "message", "content": [{"type": "input_text", "text": "Sure?"}]},
    ]
    tools = [
        {
            "type": "function",
            "name": "calc",
            "description": "Add numbers.",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "strict": True,
        }
    ]
    rcp = {"input": items, "tools": tools, "temperature": 1, "max_output_tokens": 4096}
    return {
        "responses_create_params": {**rcp, **rcp_extra},
        "agent_ref": {"type": "responses_api_agents", "name": "math_agent"},
        "expected_answer": "4",
        "verifier_metadata": {"tests": [1, 2, {"deep": None}]},
    }


@pytest.mark.parametrize("options", OPTIONS)
def test_the_common_row_shape_takes_the_fast_path(options):
    contract = get_row_contract("nemo_gym_rows", **options)
    row = gym_row()
    assert contract.check(row) == []
    assert contract.accept(json.dumps(row).encode())


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b'{"responses_create_params": {"input": "\\ud800"}, "agent_ref": {"name": "a"}}', "bad"),
        (b'{"responses_create_params": {"input": "hi"}, "agent_ref": {"name": "a"}} x', "tail"),
        (b'{"responses_create_params": {"input": "hi"}, "agent_ref": null}', "null agent_ref"),
        (b'{"responses_create_params": {"input": "hi"}, "agent_ref": {"name": "\xff"}}', "utf8"),
        (
            b'{"responses_create_params": {"input": "hi"}, "agent_ref": {"name": "a"}, '
            b'"expected_answer": "\xed\xa0\x80"}',
            "not UTF-8 in a field the pre-filter skips",
        ),
        (
            b'{"responses_create_params": {"input": "hi"}, "agent_ref": {"name": "a"}, '
            b'"responses_create_params": {"input": ""}}',
            "duplicate key, the last one is blank",
        ),
    ],
)
def test_lines_the_contract_rejects_are_not_accepted(line, why):
    options = {"default_agent_ref": {"type": "responses_api_agents", "name": "a"}}
    assert not get_row_contract("nemo_gym_rows", **options).accept(line), why
