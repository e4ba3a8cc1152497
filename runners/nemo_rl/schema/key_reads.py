"""What a NeMo-RL version's code needs beyond its types: the schema's `reads`, `none_ok`, `gated`.

- `reads` `{parent path: {key: [{"at": "file:line", "when": {dotted key: value}}]}}`: NotRequired
  keys the code indexes unconditionally (`code_reads`), at every path their class appears, with
  the condition that code runs under (an enabled union's `enabled: true`, a backend subclass's
  backend, `FILE_WHEN`: which policy backend loads a worker file). Kept only when every upstream
  example where it applies sets the key (a read they omit is on a path the analysis cannot
  see), never for a pydantic field (defaulted) or a `_private` key (filled by the code).
- `none_ok` `{class: {key: "file:line"}}`: fields typed without None whose code compares the
  value with None (`keep_top_k`: None keeps every checkpoint).
- `gated` `{parent path: {key: "file:line"}}`: required TypedDict keys read only under a test,
  which an upstream example omits where the read applies (`moe_per_layer_logging`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from catalog.config_values import dotted_get
from runners.nemo_rl.schema.builder import RECORDS, options, takes_none
from runners.nemo_rl.schema.code_reads import CodeReads

MEGATRON = {"policy.megatron_cfg.enabled": True}
DTENSOR = {"policy.dtensor_cfg.enabled": True}
DTENSOR_V1 = {**DTENSOR, "policy.dtensor_cfg._v2": False}
DTENSOR_V2 = {**DTENSOR, "policy.dtensor_cfg._v2": True}
GENERATION = "policy.generation.backend"
BACKEND_CLASSES = {  # generation config subclass -> the backend it serves (grpo.py's dispatch)
    "VllmConfig": "vllm",
    "SGLangConfig": "sglang",
    "MCoreGenerationConfig": "megatron",
    "TrtllmConfig": "trtllm",
}
ALGORITHM_MODULES = ("sft", "dpo", "grpo", "rm", "ppo", "distillation", "on_policy_distillation")
# Where code runs only for one backend: first matching prefix wins; None = never for our steps.
FILE_WHEN: tuple[tuple[str, dict | None], ...] = (
    ("nemo_rl/models/policy/workers/dtensor_policy_worker.py", DTENSOR_V1),
    ("nemo_rl/models/policy/workers/dtensor_policy_worker_v2.py", DTENSOR_V2),
    ("nemo_rl/models/automodel/", DTENSOR_V2),
    ("nemo_rl/models/dtensor/", DTENSOR),
    ("nemo_rl/models/policy/workers/megatron_policy_worker.py", MEGATRON),
    ("nemo_rl/models/megatron/", MEGATRON),
    *((f"nemo_rl/models/generation/{b}/", {GENERATION: b}) for b in ("vllm", "sglang", "trtllm")),
    ("nemo_rl/models/generation/megatron/", {GENERATION: "megatron"}),
    ("nemo_rl/algorithms/async_utils", {"grpo.async_grpo.enabled": True}),  # async GRPO only
    ("nemo_rl/modelopt/", None),  # quantisation workers
    ("nemo_rl/models/value/", None),  # PPO's value model
    ("nemo_rl/models/policy/teacher", None),  # distillation
    ("examples/run_grpo.py", {"env.should_use_nemo_gym": False}),  # Gym runs its own script
)
DEFAULTED = ("data.train", "data.validation")  # data/utils.py merges data.default into these
DEFAULTS = "data.default"  # a source of keys for the entries above, never read on its own


def file_when(at: str, algorithm: str) -> dict | None:
    """The condition under which the code at `file:line` runs, None when it never does."""
    path = at.rpartition(":")[0]
    for prefix, when in FILE_WHEN:
        if path.startswith(prefix):
            return when
    algo_file = Path(path).stem
    if path.startswith("nemo_rl/algorithms/") and algo_file in ALGORITHM_MODULES:
        return {} if algo_file == algorithm else None
    return {}


def class_paths(classes: dict, root: str) -> dict[str, list[str]]:
    """Every dotted config path each record class appears at (list items as `[]`)."""
    out: dict[str, list[str]] = {}

    def walk(t: dict, path: str, depth: int) -> None:
        if depth > 12:
            return
        for o in options(t):
            if o["t"] == "list":
                walk(o["item"], f"{path}[]", depth + 1)
            elif o["t"] == "ref" and classes.get(o["name"], {}).get("kind") in RECORDS:
                name = o["name"]
                if path in out.setdefault(name, []):
                    continue
                out[name].append(path)
                for sub in classes[name].get("subclasses", []):
                    out.setdefault(sub, []).append(path)
                    for key, spec in classes.get(sub, {}).get("fields", {}).items():
                        walk(spec["type"], f"{path}.{key}" if path else key, depth + 1)
                for key, spec in classes[name]["fields"].items():
                    walk(spec["type"], f"{path}.{key}" if path else key, depth + 1)

    walk({"t": "ref", "name": root}, "", 0)
    return out


def class_when(classes: dict, name: str, path: str) -> dict:
    """The config condition under which a mapping at `path` is validated as class `name`."""
    when: dict = {}
    enabled = classes[name].get("fields", {}).get("enabled", {}).get("type", {})
    if enabled.get("t") == "literal" and enabled.get("values") == [True] and "[]" not in path:
        when[f"{path}.enabled"] = True
    if name in BACKEND_CLASSES:
        when[GENERATION] = BACKEND_CLASSES[name]
    return when


def holds(when: dict, config: dict) -> bool:
    """Whether a config meets a condition (booleans laxly; an absent flag is false)."""
    for key, want in when.items():
        got = dotted_get(config, key, None)
        if isinstance(want, bool):
            if isinstance(got, str):
                got = got.strip().lower() in {"true", "1", "yes", "on"}
            if bool(got) is not want:
                return False
        elif got != want:
            return False
    return True


def mappings_at(config: Any, path: str) -> list[tuple[str, dict]]:
    """(concrete dotted path, mapping) at a path whose list steps are `[]` (each item)."""
    nodes: list[tuple[str, Any]] = [("", config)]
    for part in path.split(".") if path else []:
        item = part.endswith("[]")
        part = part.removesuffix("[]")
        nodes = [
            (f"{at}.{part}" if at else part, n[part])
            for at, n in nodes
            if isinstance(n, dict) and part in n
        ]
        if item:
            nodes = [
                (f"{at}[{i}]", x) for at, n in nodes if isinstance(n, list) for i, x in enumerate(n)
            ]
    return [(at, n) for at, n in nodes if isinstance(n, dict)]


def present(config: dict, path: str, mapping: dict, key: str) -> bool:
    """`key` is in `mapping`, or (train/validation entries) filled in from data.default."""
    if key in mapping:
        return True
    default = dotted_get(config, DEFAULTS, None)
    return path.removesuffix("[]") in DEFAULTED and isinstance(default, dict) and key in default


def missing_reads(doc: dict, config: dict) -> list[tuple[str, str]]:
    """(dotted key, "file:line" reading it) of each needed key the config lacks where it applies."""
    out = []
    for path, keys in doc.get("reads", {}).items():
        for key, entries in keys.items():
            entry = next((e for e in entries if holds(e["when"], config)), None)
            for at, mapping in mappings_at(config, path) if entry else ():
                if not present(config, path, mapping, key):
                    out.append((f"{at}.{key}" if at else key, entry["at"]))
    return out


def key_tables(
    facts: CodeReads, classes: dict, root: str, algorithm: str, examples: list[dict]
) -> tuple[dict, dict]:
    """(reads, none_ok) for one algorithm's schema."""
    paths = class_paths(classes, root)
    reads: dict[str, dict[str, list[dict]]] = {}
    for (name, key), places in sorted(facts.reads.items()):
        spec = facts.fields(name).get(key)
        if spec is None or spec["required"] or key.startswith("_"):
            continue
        if classes[name]["kind"] == "model" or (name, key) in facts.filled:
            continue
        for at in places:
            when_file = file_when(at, algorithm)
            for path in paths.get(name, []) if when_file is not None else ():
                when = {**class_when(classes, name, path), **when_file}
                if path == DEFAULTS or not _confirmed(examples, path, key, when):
                    continue
                entries = reads.setdefault(path, {}).setdefault(key, [])
                if all(e["when"] != when for e in entries):
                    entries.append({"at": at, "when": when})
    none_ok: dict[str, dict[str, str]] = {}
    for (name, key), at in sorted(facts.none_checked.items()):
        spec = facts.fields(name).get(key)
        if spec and not takes_none(spec["type"]):
            none_ok.setdefault(name, {})[key] = at
    return {p: dict(sorted(k.items())) for p, k in sorted(reads.items())}, none_ok


def _confirmed(examples: list[dict], path: str, key: str, when: dict) -> bool:
    """No upstream example where the read applies leaves the key out."""
    for config in examples:
        if not holds(when, config):
            continue
        for _, mapping in mappings_at(config, path):
            if not present(config, path, mapping, key):
                return False
    return True


def gated_required(
    facts: CodeReads, classes: dict, root: str, algorithm: str, examples: list[dict]
) -> dict:
    """The schema's `gated` table: before 0.7.0 nothing validates the config, so such a key is
    a KeyError only on a branch upstream's own example skips; pydantic requires it anyway."""
    paths = class_paths(classes, root)
    out: dict[str, dict[str, str]] = {}
    for (name, key), at in sorted(facts.gated.items()):
        spec = classes.get(name, {}).get("fields", {}).get(key)
        if spec is None or not spec["required"] or classes[name]["kind"] != "typeddict":
            continue
        if (name, key) in facts.reads or (name, key) in facts.looped:
            continue
        when_file = file_when(at, algorithm)
        for path in paths.get(name, []) if when_file is not None else ():
            when = {**class_when(classes, name, path), **when_file}
            if path != DEFAULTS and not _confirmed(examples, path, key, when):
                out.setdefault(path, {})[key] = at
    return {p: dict(sorted(k.items())) for p, k in sorted(out.items())}
