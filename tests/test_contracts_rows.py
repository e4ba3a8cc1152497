"""Row contracts: what each accepts, what it rejects, and the code and field it names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog.contracts import ROW_CONTRACTS, get_row_contract
from catalog.errors import StepsError

AGENT = {"type": "responses_api_agents", "name": "math_with_judge_simple_agent"}


def gym_row(**over):
    row = {
        "responses_create_params": {
            "input": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is 2+2?"},
            ],
            "tools": [
                {
                    "type": "function",
                    "name": "calc",
                    "description": "adds",
                    "parameters": {"type": "object", "properties": {}},
                    "strict": True,
                }
            ],
        },
        "agent_ref": dict(AGENT),
        "question": "What is 2+2?",
        "expected_answer": "4",
    }
    row.update(over)
    return row


def codes_fields(violations):
    return [(v.code, v.field) for v in violations]


def test_gym_row_with_messages_tools_and_verifier_fields_passes():
    assert get_row_contract("nemo_gym_rows")(gym_row()) == []


def test_gym_row_with_function_call_reasoning_and_typed_parts_passes():
    row = gym_row()
    row["responses_create_params"]["input"] += [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "t"}]},
        {"type": "function_call", "call_id": "c1", "name": "calc", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "4"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ok?"}]},
    ]
    assert get_row_contract("nemo_gym_rows")(row) == []


def test_gym_request_key_outside_responses_fields_is_rejected_with_did_you_mean():
    row = gym_row()
    row["responses_create_params"]["max_tokens"] = 10
    (v,) = get_row_contract("nemo_gym_rows")(row)
    assert (v.code, v.field) == ("E-GYM-ROW", "responses_create_params.max_tokens")
    assert "max_output_tokens" in v.fix


def test_gym_chat_completions_tool_form_is_rejected():
    row = gym_row()
    row["responses_create_params"]["tools"] = [{"type": "function", "function": {"name": "f"}}]
    assert codes_fields(get_row_contract("nemo_gym_rows")(row)) == [
        ("E-GYM-ROW", "responses_create_params.tools[0].function")
    ]


def test_gym_flat_tool_missing_strict_is_rejected():
    row = gym_row()
    del row["responses_create_params"]["tools"][0]["strict"]
    (v,) = get_row_contract("nemo_gym_rows")(row)
    assert v.field == "responses_create_params.tools[0]" and "strict" in v.message


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"role": "user"}, "responses_create_params.input[1].content"),
        ({"role": "tool", "content": "x"}, "responses_create_params.input[1].role"),
        ({"foo": 1}, "responses_create_params.input[1].role"),
        ({"role": "user", "content": "   "}, "responses_create_params.input[1].content"),
        (
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            "responses_create_params.input[1].content[0]",
        ),
        (
            {"role": "assistant", "content": "", "tool_calls": []},
            "responses_create_params.input[1].tool_calls",
        ),
        ({"type": "function_call", "call_id": "c"}, "responses_create_params.input[1].arguments"),
    ],
)
def test_gym_input_items_gym_would_accept_silently_are_rejected(item, field):
    row = gym_row()
    row["responses_create_params"]["input"][1] = item
    assert field in [v.field for v in get_row_contract("nemo_gym_rows")(row)]


def test_gym_replayed_assistant_output_is_checked_as_gyms_output_message():
    """Gym takes a message with output_text/refusal parts as its output message (id required,
    output_text with annotations); without them it rejects it, or files it as mcp_list_tools."""
    row = gym_row()
    replay = {"role": "assistant", "content": [{"type": "output_text", "text": "4"}]}
    row["responses_create_params"]["input"].append(replay)
    assert codes_fields(get_row_contract("nemo_gym_rows")(row)) == [
        ("E-GYM-ROW", "responses_create_params.input[2].id"),
        ("E-GYM-ROW", "responses_create_params.input[2].content[0].annotations"),
    ]
    replay.update(id="msg_1", content=[{"type": "output_text", "text": "4", "annotations": []}])
    assert get_row_contract("nemo_gym_rows")(row) == []


def test_gym_reasoning_summary_parts_and_tool_description_have_gyms_types():
    row = gym_row()
    row["responses_create_params"]["input"].append(
        {"type": "reasoning", "id": "rs_1", "summary": ["thought"]}
    )
    row["responses_create_params"]["tools"][0]["description"] = 3
    assert codes_fields(get_row_contract("nemo_gym_rows")(row)) == [
        ("E-GYM-ROW", "responses_create_params.input[2].summary"),
        ("E-GYM-ROW", "responses_create_params.tools[0].description"),
    ]


def test_gym_empty_input_list_is_legal_as_in_gym_unless_disallowed():
    """aviary, gdpval, scicode, toolsandbox ship `input: []`: their agents build the prompt."""
    row = gym_row()
    row["responses_create_params"]["input"] = []
    assert get_row_contract("nemo_gym_rows")(row) == []
    assert codes_fields(get_row_contract("nemo_gym_rows", allow_empty_input=False)(row)) == [
        ("E-GYM-ROW", "responses_create_params.input")
    ]


def test_gym_missing_request_is_named():
    row = gym_row()
    del row["responses_create_params"]
    assert codes_fields(get_row_contract("nemo_gym_rows")(row)) == [
        ("E-GYM-ROW", "responses_create_params")
    ]


def test_gym_missing_agent_ref_is_an_error_unless_the_config_gives_a_default():
    row = gym_row()
    del row["agent_ref"]
    assert codes_fields(get_row_contract("nemo_gym_rows")(row)) == [
        ("E-GYM-AGENT-REF", "agent_ref")
    ]
    assert get_row_contract("nemo_gym_rows", default_agent_ref=AGENT)(row) == []


def test_gym_agent_ref_with_wrong_type_or_empty_name_is_rejected():
    row = gym_row(agent_ref={"type": "resources_servers", "name": ""})
    assert codes_fields(get_row_contract("nemo_gym_rows")(row)) == [
        ("E-GYM-AGENT-REF", "agent_ref.type"),
        ("E-GYM-AGENT-REF", "agent_ref.name"),
    ]


def test_gym_agent_name_outside_the_configured_agents_gets_did_you_mean():
    contract = get_row_contract("nemo_gym_rows", agent_names=["math_with_judge_simple_agent"])
    row = gym_row(agent_ref={"type": "responses_api_agents", "name": "math_with_judge_agent"})
    (v,) = contract(row)
    assert (v.code, v.field) == ("E-GYM-AGENT", "agent_ref.name")
    assert "math_with_judge_simple_agent" in v.fix
    assert contract(gym_row()) == []


def test_preference_binary_row_passes_and_identical_pair_fails():
    contract = get_row_contract("preference_rows")
    assert contract({"prompt": "q", "chosen": "a", "rejected": "b"}) == []
    (v,) = contract({"prompt": "q", "chosen": "a", "rejected": "a"})
    assert (v.code, v.field) == ("E-DPO-ROW", "rejected")


def test_preference_keys_follow_the_config():
    contract = get_row_contract(
        "preference_rows", prompt_key="question", chosen_key="good", rejected_key="bad"
    )
    assert contract({"question": [{"role": "user", "content": "q"}], "good": "a", "bad": "b"}) == []
    (v,) = contract({"prompt": "q", "chosen": "a", "rejected": "b"})
    assert (v.code, v.field) == ("E-DPO-ROW", "question")


def test_preference_empty_chosen_is_a_named_warning():
    (v,) = get_row_contract("preference_rows")({"prompt": "q", "chosen": " ", "rejected": "b"})
    assert (v.code, v.field, v.is_error) == ("W-DPO-EMPTY-RESPONSE", "chosen", False)


def test_preference_ranked_form_needs_two_completions_of_distinct_rank():
    contract = get_row_contract("preference_rows")
    msg = [{"role": "assistant", "content": "a"}]
    ctx = [{"role": "user", "content": "q"}]
    good = {
        "context": ctx,
        "completions": [{"rank": 0, "completion": msg}, {"rank": 1, "completion": msg}],
    }
    assert contract(good) == []
    tie = {
        "context": ctx,
        "completions": [{"rank": 0, "completion": msg}, {"rank": 0, "completion": msg}],
    }
    assert codes_fields(contract(tie)) == [("E-DPO-ROW", "completions[1].rank")]
    three = {"context": ctx, "completions": [{"rank": i, "completion": msg} for i in range(3)]}
    assert codes_fields(contract(three)) == [("E-DPO-ROW", "completions")]


def test_verifiable_prompt_keys_follow_the_config_and_messages_pass_through():
    contract = get_row_contract("verifiable_prompt_rows", input_key="problem", output_key="answer")
    assert contract({"problem": "1+1?", "answer": "2"}) == []
    assert contract({"problem": "1+1?", "answer": 2}) == []  # no config: the processor unknown
    math = get_row_contract(
        "verifiable_prompt_rows", input_key="problem", output_key="answer", text_answer=True
    )  # math_hf_data_processor + the math env: the verifier concatenates the answer as text
    assert codes_fields(math({"problem": "1+1?", "answer": 2})) == [
        ("E-RLVR-NUMERIC-ANSWER", "answer")
    ]
    assert math({"problem": "1+1?", "answer": "2"}) == []
    assert contract({"messages": [{"role": "user", "content": "1+1?"}]}) == []
    assert codes_fields(contract({"problem": "1+1?", "answer": ""})) == [("E-RLVR-ROW", "answer")]
    assert codes_fields(contract({"input": "1+1?", "output": "2"})) == [
        ("E-RLVR-ROW", "problem"),
        ("E-RLVR-ROW", "answer"),
    ]


def test_unknown_contract_and_option_are_steps_errors():
    with pytest.raises(StepsError) as exc:
        get_row_contract("nemo_gym_row")
    assert (
        exc.value.finding.code == "E-CONTRACT-UNKNOWN" and "nemo_gym_rows" in exc.value.finding.fix
    )
    with pytest.raises(StepsError) as exc:
        get_row_contract("preference_rows", input_key="x")
    assert exc.value.finding.code == "E-CONTRACT-OPTION"


def test_non_object_row_is_a_violation_not_a_crash():
    for name in ("nemo_gym_rows", "preference_rows", "verifiable_prompt_rows"):
        (v,) = get_row_contract(name)([1, 2])
        assert "object" in v.message


KEYS = ["role", "content", "type", "text", "prompt", "chosen", "rejected", "context"]
KEYS += ["completions", "rank", "completion", "input", "output", "messages", "name", "tools"]
KEYS += ["responses_create_params", "agent_ref", "summary", "call_id", "arguments", "parameters"]
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=25,
)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ROW_CONTRACTS))
@settings(max_examples=200, deadline=None)
@given(value=json_value)
def test_no_json_value_makes_a_contract_raise(name, value):
    violations = get_row_contract(name)(value)
    assert all(v.code and v.message for v in violations)


@pytest.mark.parametrize("bad", [[], {}, ["user"]])
def test_a_list_or_object_where_a_role_or_type_belongs_is_a_violation_not_a_crash(bad):
    row = gym_row()
    row["responses_create_params"]["input"] = [
        {"role": bad, "content": "x"},
        {"type": bad, "call_id": "c"},
        {"role": "user", "content": [{"type": bad, "text": "x"}]},
    ]
    fields = [v.field for v in get_row_contract("nemo_gym_rows")(row)]
    assert fields == [
        "responses_create_params.input[0].role",
        "responses_create_params.input[1].type",
        "responses_create_params.input[2].content[0]",
    ]
    pref = {"prompt": [{"role": bad, "content": "q"}], "chosen": "a", "rejected": "b"}
    assert [v.field for v in get_row_contract("preference_rows")(pref)] == ["prompt[0].role"]
