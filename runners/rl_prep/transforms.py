"""Row transforms: reshape a source row into the form its output type's contract expects.

Each transform takes a parsed row (a dict) and the dataset's spec and returns `(row, changed)`.
`changed=False` lets the writer copy the original line bytes instead of re-serializing. A row
a transform cannot reshape is returned unchanged: the output contract then names what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runners.rl_prep.blend import DatasetSpec

Transform = Callable[[dict, "DatasetSpec"], tuple[dict, bool]]

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


def _completion(value: Any) -> Any:
    if isinstance(value, dict) and "completion" in value:
        msgs = _messages(value["completion"], "assistant")
        return {**value, "completion": msgs} if msgs is not None else value
    return value


def preference(row: dict, spec: DatasetSpec) -> tuple[dict, bool]:
    """Normalize `{prompt, chosen, rejected}` and `{context, completions}` to the latter.

    `{context: [messages], completions: [{rank, completion: [messages]}] x2}` is what NeMo-RL's
    PreferenceDataset reads (and the only form `dpo.val_data_paths` accepts); it loses nothing
    from the binary form. Strings become single messages; completions are sorted by rank.
    """
    if "context" in row and "completions" in row:
        out = dict(row)
        context = _messages(row["context"], "user")
        if context is not None:
            out["context"] = context
        comps = row["completions"]
        if isinstance(comps, list):
            comps = [_completion(c) for c in comps]
            if all(isinstance(c, dict) and isinstance(c.get("rank"), int) for c in comps):
                comps = sorted(comps, key=lambda c: c["rank"])
            out["completions"] = comps
        return out, out != row
    if {"prompt", "chosen", "rejected"} <= row.keys():
        context = _messages(row["prompt"], "user")
        chosen = _messages(row["chosen"], "assistant")
        rejected = _messages(row["rejected"], "assistant")
        if context is None or chosen is None or rejected is None:
            return row, False
        rest = {k: v for k, v in row.items() if k not in ("prompt", "chosen", "rejected")}
        out = {
            "context": context,
            "completions": [
                {"rank": 0, "completion": chosen},
                {"rank": 1, "completion": rejected},
            ],
            **rest,
        }
        return out, True
    return row, False


def nemotron_rl(row: dict, spec: DatasetSpec) -> tuple[dict, bool]:
    """`responses_create_params.{input, tools}` -> `messages` (+ `tools`), for chat consumers.

    Unlike Nemotron's transform of the same name, the other fields (verifier data, agent_ref)
    are kept rather than dropped.
    """
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


TRANSFORMS: dict[str, Transform] = {
    "nemo_gym": nemo_gym,
    "preference": preference,
    "nemotron_rl": nemotron_rl,
    "passthrough": passthrough,
}
