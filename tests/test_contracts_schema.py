"""The published JSON Schemas of the row contracts agree with the fast validators."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog.contracts import get_row_contract

SCHEMAS = Path(__file__).resolve().parent.parent / "catalog" / "schema" / "rows"

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


def agree(contract: str, row: dict, cross_field_ok: bool = True) -> None:
    schema = json.loads((SCHEMAS / f"{contract}.schema.json").read_text())
    schema_ok = jsonschema.Draft202012Validator(schema).is_valid(row)
    fast_ok = not get_row_contract(contract)(row)
    if schema_ok and not cross_field_ok:
        assert not fast_ok  # the rule JSON Schema cannot state
    else:
        assert schema_ok == fast_ok, (row, get_row_contract(contract)(row))


@settings(max_examples=400, deadline=None)
@given(st.one_of(binary, ranked))
def test_preference_schema_and_fast_validator_agree(row):
    tie = False
    comps = row.get("completions")
    if isinstance(comps, list) and len(comps) == 2 and all(isinstance(c, dict) for c in comps):
        ranks = [c.get("rank") for c in comps]
        tie = ranks[0] == ranks[1] and isinstance(ranks[0], int)
    same = "chosen" in row and row.get("chosen") == row.get("rejected")
    agree("preference_rows", row, cross_field_ok=not (tie or same))


@settings(max_examples=400, deadline=None)
@given(prompts)
def test_verifiable_prompt_schema_and_fast_validator_agree(row):
    agree("verifiable_prompt_rows", row)
