"""The rows of NeMo-RL's own datasets: DPO preference pairs and RLVR verifiable prompts.

Both take chat messages (`{role, content}` lists) in places: `check_chat_messages` checks them.

DPO rows come in the two forms NeMo-RL reads. `{prompt, chosen, rejected}`
(BinaryPreferenceDataset; keys renamed by the data config's `prompt_key`/`chosen_key`/
`rejected_key`): prompt a string or a message list, chosen and rejected strings that differ. An
empty chosen/rejected is a warning (NeMo-RL v0.7.0 trains on it); a message list, a null or a
missing key fails its chat template (llm_message_utils.py:530). `{context, completions}`
(PreferenceDataset): exactly two completions whose ranks differ (the lower rank is chosen;
upstream raises on a tie).

RLVR rows: ResponseDataset maps `{input_key, output_key}` (default `input`/`output`) to a user
and an assistant message; rows that already carry `messages` pass through unchanged, and the
default math processor reads `messages[0]` as the problem and `messages[1]` as the answer.
A numeric answer reaches the math verifier as it was loaded under math_hf_data_processor (the
default; v0.7.0 processors.py:392), and the verifier's `"\\boxed{" + ground_truth + "}"`
(math_environment.py:107; the DAPO verifier's string tests alike) raises on it inside a
`try` that scores the row 0: every such row trains on reward 0. math_data_processor and
multichoice_qa_processor pass the answer through str() (processors.py:321, 681), so there a
number is fine. `text_answer` (from the step's config, contract_options): True when the
config sends the raw answer to a math verifier, where a number is an error; off by default
(`validate` without --step does not know the processor).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from catalog.contracts.rows import RowCheck, RowViolation, add, is_blank, type_name
from catalog.errors import WARNING

DPO = "E-DPO-ROW"
RLVR = "E-RLVR-ROW"
_dpo = partial(add, DPO)  # a violation of the DPO contract, appended
_rlvr = partial(add, RLVR)  # a violation of the RLVR contract, appended
# Roles NeMo-RL's chat templates take in `messages` / DPO `context` and `completion` lists.
CHAT_ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})


def check_chat_messages(messages: Any, field: str, code: str, out: list[RowViolation]) -> None:
    """A non-empty list of `{role, content}` with a known role and non-empty content."""
    bad = partial(add, code, out)
    if type(messages) is not list:
        got = f"expected a list of {{role, content}} messages, got {type_name(messages)}"
        return bad(field, got, f'write {field} as [{{"role": "user", "content": "..."}}]')
    if not messages:
        return bad(field, "messages list is empty", "give at least one message")
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


EMPTY = "W-DPO-EMPTY-RESPONSE"


def _check_ranked(row: dict, out: list[RowViolation]) -> None:
    check_chat_messages(row.get("context"), "context", DPO, out)
    comps = row.get("completions")
    if type(comps) is not list or len(comps) != 2:
        got = f"{len(comps)} completions" if type(comps) is list else type_name(comps)
        _dpo(
            out,
            "completions",
            f"expected exactly two completions, got {got}",
            'write "completions": [{"rank": 0, "completion": [...]}, '
            '{"rank": 1, "completion": [...]}]',
        )
        return
    ranks = []
    for i, comp in enumerate(comps):
        field = f"completions[{i}]"
        if type(comp) is not dict:
            _dpo(out, field, f"expected a {{rank, completion}} object, got {type_name(comp)}")
            continue
        rank = comp.get("rank")
        if type(rank) is not int:
            said = f"rank must be an integer, got {type_name(rank)}"
            _dpo(out, f"{field}.rank", said, "rank 0 for the preferred completion, 1 for the other")
        else:
            ranks.append(rank)
        check_chat_messages(comp.get("completion"), f"{field}.completion", DPO, out)
    if len(ranks) == 2 and ranks[0] == ranks[1]:
        said = f"both completions have rank {ranks[0]}; the preferred one must rank lower"
        fix = "give the preferred completion rank 0 and the other rank 1"
        _dpo(out, "completions[1].rank", said, fix)


def preference_rows(
    prompt_key: str = "prompt", chosen_key: str = "chosen", rejected_key: str = "rejected"
) -> RowCheck:
    """Build the DPO row check for the data config's key names."""
    keys = (prompt_key, chosen_key, rejected_key)

    def check(row: Any) -> list[RowViolation]:
        out: list[RowViolation] = []
        if type(row) is not dict:
            _dpo(out, "", f"a row must be an object, got {type_name(row)}")
            return out
        if "completions" in row or ("context" in row and chosen_key not in row):
            _check_ranked(row, out)
            return out
        missing = [k for k in keys if k not in row]
        if missing:
            _dpo(
                out,
                missing[0],
                f"missing {', '.join(repr(k) for k in missing)} "
                f"(expected {{{', '.join(keys)}}} or {{context, completions}})",
                "rename the columns, or set prompt_key/chosen_key/rejected_key in the data config",
            )
            return out
        prompt = row[prompt_key]
        if type(prompt) is list:
            check_chat_messages(prompt, prompt_key, DPO, out)
        elif type(prompt) is not str or (not prompt or prompt.isspace()):
            what = "empty" if type(prompt) is str else f"a {type_name(prompt)}"
            said = f"prompt must be a non-empty string or a message list, got {what}"
            _dpo(out, prompt_key, said, "give the prompt text")
        chosen, rejected = row[chosen_key], row[rejected_key]
        for key, value in ((chosen_key, chosen), (rejected_key, rejected)):
            if type(value) is not str:
                said = f"expected the response as a string, got {type_name(value)}"
                _dpo(out, key, said, "give the assistant's reply text")
            elif not value or value.isspace():
                add(
                    EMPTY,
                    out,
                    key,
                    f"{key!r} is empty: NeMo-RL trains on it (the response is the chat "
                    "template's end token alone), but the pair teaches little",
                    "give the reply text, or drop the row",
                    WARNING,
                )
        if type(chosen) is str and chosen == rejected and not is_blank(chosen):
            said = f"{chosen_key!r} and {rejected_key!r} are identical (no preference signal)"
            _dpo(out, rejected_key, said, "drop the row or give two different responses")
        return out

    return check


NUMERIC = "E-RLVR-NUMERIC-ANSWER"
NUMERIC_FIX = (
    'give the answer as text ("210" in JSON); a CSV column of numbers is typed as numbers, so '
    "write such data as JSONL, or Parquet with a string column"
)


def _got(row: dict, key: str) -> str:
    """What a row holds under `key` that is not the text it should be."""
    if key not in row:
        return "missing"
    return "empty" if type(row[key]) is str else f"a {type_name(row[key])}"


def verifiable_prompt_rows(
    input_key: str = "input", output_key: str = "output", text_answer: bool = False
) -> RowCheck:
    """Build the RLVR row check for the data config's input/output keys (`text_answer`: see
    the module docstring)."""

    def check(row: Any) -> list[RowViolation]:
        out: list[RowViolation] = []
        if type(row) is not dict:
            _rlvr(out, "", f"a row must be an object, got {type_name(row)}")
            return out
        if "messages" in row and input_key not in row:
            check_chat_messages(row["messages"], "messages", RLVR, out)
            return out
        value = row.get(input_key)
        if type(value) is not str or not value or value.isspace():
            _rlvr(
                out,
                input_key,
                f"the prompt must be a non-empty string, got {_got(row, input_key)}",
                f"give the prompt under {input_key!r}, or set input_key in the data config "
                "(or give `messages`)",
            )
        answer = row.get(output_key)
        ok = (type(answer) is str and not is_blank(answer)) or type(answer) in (int, float)
        if not ok:
            what = _got(row, output_key)
            said = f"the verifiable answer must be a non-empty string or a number, got {what}"
            fix = f"give the answer under {output_key!r}, or set output_key in the data config"
            _rlvr(out, output_key, said, fix)
        elif text_answer and type(answer) is not str:
            kind = "an integer" if type(answer) is int else "a float"
            said = (
                f"the answer is {kind}, not text: NeMo-RL's math verifier builds "
                "'\\boxed{' + answer + '}' from it, which fails on a number, and scores the row 0"
            )
            add(NUMERIC, out, output_key, said, NUMERIC_FIX)
        return out

    return check
