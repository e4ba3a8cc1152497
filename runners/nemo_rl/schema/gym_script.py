"""What NeMo-RL's NeMo-Gym script reads of `data:` itself, from its source (nothing is imported).

From 0.6.0 `examples/nemo_gym/run_grpo_nemo_gym.py` hands the whole `data` section to the setup
`run_grpo.py` uses, so one schema judges both. In 0.5.0 it opens `data.train_jsonl_fpath` and
`data.validation_jsonl_fpath` itself (:205-211): a Gym config there is judged by the keys the
script reads plus the required ones `grpo.py`'s setup reads; 0.4.0 has no Gym script. The
schema's `gym` entry: `{"script", "data": {key: "file:line"}, "data_required", "data_read"}`
(the last three only where the script reads its own keys).
"""

from __future__ import annotations

import ast
from pathlib import Path

from runners.nemo_rl.schema.code_reads import FUNCS, CodeReads, _conditional, _parents, _str_key

GYM_SCRIPT = "examples/nemo_gym/run_grpo_nemo_gym.py"
OWN_SCRIPT = "examples/run_grpo.py"  # what the Gym path never runs
SECTION = "data"
GYM_DATA_CLASS = "the NeMo-Gym script's data"  # the class `gym_data_classes` puts at data


def _is_section(e: ast.expr) -> bool:
    """`config["data"]` or `config.data` (a pydantic MasterConfig, 0.7.0+)."""
    if isinstance(e, ast.Subscript):
        return _str_key(e.slice) == SECTION
    return isinstance(e, ast.Attribute) and e.attr == SECTION


def script_reads(tree: ast.Module) -> tuple[dict[str, int], bool]:
    """(data keys read unconditionally in a function: their first line, whether the whole
    section is passed on to a call)."""
    reads: dict[str, int] = {}
    whole = False
    for fn in (n for n in ast.walk(tree) if isinstance(n, FUNCS)):
        nodes = list(ast.walk(fn))
        parents = _parents(nodes)
        for n in nodes:
            if isinstance(n, ast.Call):
                args = [*n.args, *(k.value for k in n.keywords)]
                whole = whole or any(_is_section(a) for a in args)
            elif (
                isinstance(n, ast.Subscript)
                and isinstance(n.ctx, ast.Load)
                and _is_section(n.value)
                and _str_key(n.slice)
                and _conditional(n, fn, parents) is None
            ):
                reads.setdefault(str(_str_key(n.slice)), n.lineno)
    return reads, whole


def gym_entry(checkout: Path, facts: CodeReads, classes: dict, root: str) -> dict:
    """The schema's `gym` entry for GRPO (see the module's docstring)."""
    path = checkout / GYM_SCRIPT
    if not path.is_file():
        return {"script": None}
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError):
        return {"script": GYM_SCRIPT}
    reads, whole = script_reads(tree)
    data_type = classes[root]["fields"].get(SECTION, {}).get("type", {})
    data_cls = data_type.get("name") if data_type.get("t") == "ref" else None
    if whole or not reads or data_cls not in classes:
        return {"script": GYM_SCRIPT}
    shared = f"{OWN_SCRIPT}:"
    required, typed = [], []
    for key, spec in classes[data_cls]["fields"].items():
        places = facts.reads.get((data_cls, key), [])
        gated = facts.gated.get((data_cls, key), shared)
        if any(not p.startswith(shared) for p in places):
            required += [key] if spec["required"] else []
            typed.append(key)
        elif not gated.startswith(shared) or (data_cls, key) in facts.looped:
            typed.append(key)
    return {
        "script": GYM_SCRIPT,
        "data": {key: f"{GYM_SCRIPT}:{line}" for key, line in sorted(reads.items())},
        "data_required": sorted(required),
        "data_read": sorted(typed),
    }


def gym_data_classes(classes: dict, root: str, gym: dict) -> tuple[dict, str]:
    """The classes with `data` as the 0.5.0 Gym script reads it: its own keys required, the
    data class's keys the shared setup reads (`gym.data_read`) typed, the rest accepted."""
    data_ref = classes[root]["fields"]["data"]["type"]
    base = classes.get(data_ref.get("name", ""), {"fields": {}})
    read = set(gym.get("data_read", []))
    fields = {
        k: {**spec, "required": k in gym.get("data_required", [])}
        if k in read
        else {**spec, "required": False, "type": {"t": "any"}}
        for k, spec in base["fields"].items()
    }
    first = min(gym["data"].values(), key=lambda at: int(at.rpartition(":")[2]))
    for key, at in gym["data"].items():
        fields[key] = {"type": {"t": "str"}, "required": True, "line": int(at.rpartition(":")[2])}
    out = dict(classes)
    out[GYM_DATA_CLASS] = {"kind": "typeddict", "source": first, "fields": fields}
    root_fields = dict(classes[root]["fields"])
    root_fields["data"] = {**root_fields["data"], "type": {"t": "ref", "name": GYM_DATA_CLASS}}
    out[root] = {**classes[root], "fields": root_fields}
    return out, root
