"""DPO preference rows, in the two forms NeMo-RL reads.

`{prompt, chosen, rejected}` (BinaryPreferenceDataset; keys renamed by the data config's
`prompt_key`/`chosen_key`/`rejected_key`): prompt a string or a message list, chosen and
rejected strings that differ. An empty chosen/rejected is a warning (NeMo-RL v0.7.0 trains on
it); a message list, a null or a missing key fails its chat template (llm_message_utils.py:530).
`{context, completions}` (PreferenceDataset): exactly two completions whose ranks differ (the
lower rank is chosen; upstream raises on a tie).
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
from catalog.errors import WARNING

CODE = "E-DPO-ROW"
_bad = partial(add, CODE)  # a violation of this contract, appended
EMPTY = "W-DPO-EMPTY-RESPONSE"


def _check_ranked(row: dict, out: list[RowViolation]) -> None:
    check_chat_messages(row.get("context"), "context", CODE, out)
    comps = row.get("completions")
    if type(comps) is not list or len(comps) != 2:
        got = f"{len(comps)} completions" if type(comps) is list else type_name(comps)
        _bad(
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
            _bad(out, field, f"expected a {{rank, completion}} object, got {type_name(comp)}")
            continue
        rank = comp.get("rank")
        if type(rank) is not int:
            _bad(
                out,
                f"{field}.rank",
                f"rank must be an integer, got {type_name(rank)}",
                "rank 0 for the preferred completion, 1 for the other",
            )
        else:
            ranks.append(rank)
        check_chat_messages(comp.get("completion"), f"{field}.completion", CODE, out)
    if len(ranks) == 2 and ranks[0] == ranks[1]:
        _bad(
            out,
            "completions[1].rank",
            f"both completions have rank {ranks[0]}; the preferred one must rank lower",
            "give the preferred completion rank 0 and the other rank 1",
        )


def preference_rows(
    prompt_key: str = "prompt", chosen_key: str = "chosen", rejected_key: str = "rejected"
) -> RowCheck:
    """Build the DPO row check for the data config's key names."""
    keys = (prompt_key, chosen_key, rejected_key)

    def check(row: Any) -> list[RowViolation]:
        out: list[RowViolation] = []
        if type(row) is not dict:
            _bad(out, "", f"a row must be an object, got {type_name(row)}")
            return out
        if "completions" in row or ("context" in row and chosen_key not in row):
            _check_ranked(row, out)
            return out
        missing = [k for k in keys if k not in row]
        if missing:
            _bad(
                out,
                missing[0],
                f"missing {', '.join(repr(k) for k in missing)} "
                f"(expected {{{', '.join(keys)}}} or {{context, completions}})",
                "rename the columns, or set prompt_key/chosen_key/rejected_key in the data config",
            )
            return out
        prompt = row[prompt_key]
        if type(prompt) is list:
            check_chat_messages(prompt, prompt_key, CODE, out)
        elif type(prompt) is not str or (not prompt or prompt.isspace()):
            what = "empty" if type(prompt) is str else f"a {type_name(prompt)}"
            _bad(
                out,
                prompt_key,
                f"prompt must be a non-empty string or a message list, got {what}",
                "give the prompt text",
            )
        chosen, rejected = row[chosen_key], row[rejected_key]
        for key, value in ((chosen_key, chosen), (rejected_key, rejected)):
            if type(value) is not str:
                _bad(
                    out,
                    key,
                    f"expected the response as a string, got {type_name(value)}",
                    "give the assistant's reply text",
                )
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
            _bad(
                out,
                rejected_key,
                f"{chosen_key!r} and {rejected_key!r} are identical (no preference signal)",
                "drop the row or give two different responses",
            )
        return out

    return check
