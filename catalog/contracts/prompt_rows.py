"""Verifiable-prompt rows for NeMo-RL response datasets (RLVR).

ResponseDataset maps `{input_key, output_key}` (default `input`/`output`) to a user and an
assistant message; rows that already carry `messages` pass through unchanged, and the default
math processor reads `messages[0]` as the problem and `messages[1]` as the answer.
"""

from __future__ import annotations

from typing import Any

from catalog.contracts.rows import (
    RowCheck,
    RowViolation,
    check_chat_messages,
    is_blank,
    type_name,
)

CODE = "E-RLVR-ROW"


def verifiable_prompt_rows(input_key: str = "input", output_key: str = "output") -> RowCheck:
    """Build the RLVR row check for the data config's input/output keys."""

    def check(row: Any) -> list[RowViolation]:
        out: list[RowViolation] = []
        if type(row) is not dict:
            out.append(RowViolation(CODE, "", f"a row must be an object, got {type_name(row)}"))
            return out
        if "messages" in row and input_key not in row:
            check_chat_messages(row["messages"], "messages", CODE, out)
            return out
        value = row.get(input_key)
        if type(value) is not str or (not value or value.isspace()):
            what = (
                "missing"
                if input_key not in row
                else ("empty" if type(value) is str else f"a {type_name(value)}")
            )
            out.append(
                RowViolation(
                    CODE,
                    input_key,
                    f"the prompt must be a non-empty string, got {what}",
                    f"give the prompt under {input_key!r}, or set input_key in the data config "
                    "(or give `messages`)",
                )
            )
        answer = row.get(output_key)
        ok = (type(answer) is str and not is_blank(answer)) or type(answer) in (int, float)
        if not ok:
            what = (
                "missing"
                if output_key not in row
                else ("empty" if type(answer) is str else f"a {type_name(answer)}")
            )
            out.append(
                RowViolation(
                    CODE,
                    output_key,
                    f"the verifiable answer must be a non-empty string or a number, got {what}",
                    f"give the answer under {output_key!r}, or set output_key in the data config",
                )
            )
        return out

    return check
