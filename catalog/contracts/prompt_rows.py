"""Verifiable-prompt rows for NeMo-RL response datasets (RLVR).

ResponseDataset maps `{input_key, output_key}` (default `input`/`output`) to a user and an
assistant message; rows that already carry `messages` pass through unchanged, and the default
math processor reads `messages[0]` as the problem and `messages[1]` as the answer.

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

from catalog.contracts.rows import (
    RowCheck,
    RowViolation,
    add,
    check_chat_messages,
    is_blank,
    type_name,
)

CODE = "E-RLVR-ROW"
_bad = partial(add, CODE)  # a violation of this contract, appended
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
            _bad(out, "", f"a row must be an object, got {type_name(row)}")
            return out
        if "messages" in row and input_key not in row:
            check_chat_messages(row["messages"], "messages", CODE, out)
            return out
        value = row.get(input_key)
        if type(value) is not str or not value or value.isspace():
            _bad(
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
            _bad(
                out,
                output_key,
                f"the verifiable answer must be a non-empty string or a number, got {what}",
                f"give the answer under {output_key!r}, or set output_key in the data config",
            )
        elif text_answer and type(answer) is not str:
            kind = "an integer" if type(answer) is int else "a float"
            said = (
                f"the answer is {kind}, not text: NeMo-RL's math verifier builds "
                "'\\boxed{' + answer + '}' from it, which fails on a number, and scores the row 0"
            )
            add(NUMERIC, out, output_key, said, NUMERIC_FIX)
        return out

    return check
