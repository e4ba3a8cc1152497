"""Row transforms: each takes a row and the dataset's spec and returns `(row, changed)`;
`changed=False` lets the writer copy the original bytes. A row with no output form is
`RowRejected`. Before the transform, a blend's `map` sets row fields from dotted source paths
(steps/data_prep/rl_prep/README.md, "Mapping fields"); a row lacking one, or null there
(Parquet's missing struct field), is E-BLEND-MAP."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runners.rl_prep.spec import DatasetSpec

Transform = Callable[[dict, "DatasetSpec"], tuple[dict, bool]]
DottedPath = tuple[str | int, ...]
_INDEX = re.compile(r"-?\d+")
_KEY = re.compile(r"[^.\s]+")

# Fields a NeMo-Gym prompt is built from when `responses_create_params` is absent, in order.
PROMPT_FIELDS = ("messages", "prompt", "question", "problem", "input")

# Which transforms may feed which output type, and the default when a dataset names none.
COMPATIBLE = {
    "nemo_gym_jsonl": ("nemo_gym", "passthrough"),
    "preference_jsonl": ("preference", "passthrough"),
    "verifiable_prompt_jsonl": ("nemotron_rl", "passthrough"),
    "training_jsonl": ("nemotron_rl", "passthrough", "nemo_gym", "preference"),
}
DEFAULT_TRANSFORM = {
    "nemo_gym_jsonl": "nemo_gym",
    "preference_jsonl": "preference",
    "verifiable_prompt_jsonl": "passthrough",
    "training_jsonl": "passthrough",
}


def _messages(value: Any, role: str) -> list | None:
    """A string becomes one message of `role`; a message or a list of messages is kept."""
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, dict) and "role" in value:
        return [value]
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return value
    return None


def _flat_tool(tool: Any) -> Any:
    """Chat-Completions `{type, function: {...}}` -> the flat Responses form Gym requires."""
    if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
        fn = tool["function"]
        flat = {"type": "function", "name": fn.get("name"), "parameters": fn.get("parameters")}
        flat["strict"] = fn.get("strict", False)
        if fn.get("description") is not None:
            flat["description"] = fn["description"]
        return flat
    return tool


def nemo_gym(row: dict, spec: DatasetSpec) -> tuple[dict, bool]:
    """Keep every field; build `responses_create_params` from a prompt field; fill `agent_ref`."""
    changed = False
    if "responses_create_params" not in row:
        for key in PROMPT_FIELDS:
            msgs = _messages(row.get(key), "user")
            if msgs is None:
                continue
            if key == "messages":
                msgs = [{"role": m.get("role"), "content": m.get("content")} for m in msgs]
            params: dict[str, Any] = {"input": msgs}
            if key == "messages" and isinstance(row.get("tools"), list) and row["tools"]:
                params["tools"] = [_flat_tool(t) for t in row["tools"]]
            row = {"responses_create_params": params, **row}
            changed = True
            break
    if "agent_ref" not in row and spec.agent_ref is not None:
        row["agent_ref"] = dict(spec.agent_ref)
        changed = True
    return row, changed


class RowRejected(Exception):
    """A row the transform cannot reshape into its output form (reported like a contract error)."""

    def __init__(self, code: str, field: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.code, self.field, self.message, self.fix = code, field, message, fix


@lru_cache(maxsize=1024)
def parse_path(text: str, targets_only: bool = False) -> DottedPath:
    """`a.0.b` -> ("a", 0, "b"); ValueError naming the problem for a path that is not one."""
    if not text or text != text.strip():
        raise ValueError(f"`{text}` is not a dotted path (empty, or spaces around it)")
    parts: list[str | int] = []
    for seg in text.split("."):
        if not _KEY.fullmatch(seg):
            raise ValueError(f"`{text}` has an empty or blank segment (write a.b.0.c)")
        if _INDEX.fullmatch(seg):
            if targets_only:
                raise ValueError(f"`{text}`: a target is made of field names, not list indexes")
            parts.append(int(seg))
        else:
            parts.append(seg)
    return tuple(parts)


def lookup(row: Any, path: DottedPath) -> tuple[bool, Any, str]:
    """(found, value, where it stopped): `where` names the first missing segment when not found."""
    value = row
    for depth, seg in enumerate(path):
        if isinstance(seg, int):
            ok = isinstance(value, list) and -len(value) <= seg < len(value)
        else:
            ok = isinstance(value, dict) and seg in value
        if not ok:
            parent = ".".join(str(p) for p in path[:depth]) or "the row"
            kind = type(value).__name__ if value is not None else "null"
            what = f"index {seg}" if isinstance(seg, int) else f"key `{seg}`"
            return False, None, f"{parent} ({kind}) has no {what}"
        value = value[seg]
    return True, value, ""


def _put(row: dict, target: DottedPath, value: Any) -> None:
    node = row
    for seg in target[:-1]:
        child = node.get(seg)  # type: ignore[call-overload]
        if not isinstance(child, dict):
            child = node[seg] = {}  # type: ignore[index]
        else:
            child = node[seg] = dict(child)  # type: ignore[index]  # never edit the source's
        node = child
    node[target[-1]] = value  # type: ignore[index]


def apply_map(row: dict, fields: tuple[tuple[str, str], ...]) -> dict:
    """A copy of `row` with every mapped field set from its source path (E-BLEND-MAP if absent)."""
    out = dict(row)
    for target, source in fields:
        found, value, where = lookup(row, parse_path(source))
        if found and value is None:  # Parquet has no "absent": a missing struct field is null
            found, where = False, f"{source} is null"
        if not found:
            raise RowRejected(
                "E-BLEND-MAP",
                target,
                f"maps from `{source}`, which this row lacks: {where}",
                f"fix `map: {{{target}: {source}}}` in the blend to a path every row has",
            )
        _put(out, parse_path(target, targets_only=True), value)
    return out


def _response_text(value: Any, field: str) -> Any:
    """A response as the single string BinaryPreferenceDataset reads."""
    if isinstance(value, str):
        return value
    msgs = _messages(value, "assistant")
    if msgs is not None and len(msgs) == 1 and isinstance(msgs[0].get("content"), str):
        return msgs[0]["content"]
    raise RowRejected(
        "E-DPO-ROW",
        field,
        "a response must be a string or one assistant message with string content",
        "keep one response per completion, or drop multi-turn completions",
    )


def _bad_completions(message: str, fix: str) -> RowRejected:
    return RowRejected("E-DPO-ROW", "completions", message, fix)


def preference(row: dict, spec: DatasetSpec) -> tuple[dict, bool]:
    """Normalize `{context, completions}` and `{prompt, chosen, rejected}` to the latter (what
    NeMo-RL's BinaryPreferenceDataset reads): the lower rank is chosen, as NeMo-RL's preference
    processor does; a one-message response becomes its content string."""
    if "context" in row and "completions" in row and "prompt" not in row:
        comps = row["completions"]
        if not isinstance(comps, list) or len(comps) != 2:
            n = len(comps) if isinstance(comps, list) else type(comps).__name__
            raise _bad_completions(
                f"expected exactly two completions, got {n}",
                "keep the best and the worst completion of each prompt",
            )
        ranks = [c.get("rank") if isinstance(c, dict) else None for c in comps]
        if not all(isinstance(r, int) and not isinstance(r, bool) for r in ranks):
            raise _bad_completions(
                "every completion needs an integer rank",
                "add rank 0 to the preferred completion and 1 to the other",
            )
        if ranks[0] == ranks[1]:
            raise _bad_completions(
                f"both completions have rank {ranks[0]}; a tie has no chosen response",
                "give the preferred completion the lower rank, or drop the tie",
            )
        best, worst = sorted(comps, key=lambda c: c["rank"])
        rest = {k: v for k, v in row.items() if k not in ("context", "completions")}
        out = {
            "prompt": row["context"],
            "chosen": _response_text(best.get("completion"), "completions.completion"),
            "rejected": _response_text(worst.get("completion"), "completions.completion"),
            **rest,
        }
        return out, True
    if {"chosen", "rejected"} <= row.keys():
        out = dict(row)
        for key in ("chosen", "rejected"):
            if not isinstance(row[key], str) and row[key] is not None:
                out[key] = _response_text(row[key], key)
        return out, out != row
    return row, False


def nemotron_rl(row: dict, spec: DatasetSpec) -> tuple[dict, bool]:
    """`responses_create_params.{input, tools}` -> `messages` (+ `tools`); unlike Nemotron's
    transform of that name, the other fields are kept."""
    params = row.get("responses_create_params")
    if not isinstance(params, dict):
        return row, False
    msgs = _messages(params.get("input"), "user")
    if msgs is None:
        return row, False
    out = {"messages": msgs}
    if isinstance(params.get("tools"), list) and params["tools"]:
        out["tools"] = params["tools"]
    out.update((k, v) for k, v in row.items() if k != "responses_create_params")
    return out, True


def passthrough(row: dict, spec: DatasetSpec) -> tuple[dict, bool]:
    """Rows are already in the output form: check them, copy them."""
    return row, False


# Transforms that keep a row passing the contract as is: an accepted line is copied unparsed.
KEEPS_VALID_ROWS = frozenset({"nemo_gym", "passthrough"})

TRANSFORMS: dict[str, Transform] = {
    "nemo_gym": nemo_gym,
    "preference": preference,
    "nemotron_rl": nemotron_rl,
    "passthrough": passthrough,
}
