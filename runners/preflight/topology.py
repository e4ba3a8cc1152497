"""What a compiled NeMo-RL config implies (backend, parallel sizes, GPUs, data-parallel size),
read as upstream's `lm_policy.Policy.__init__` and `grpo.setup` do; and the rules' helpers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from catalog.config_values import as_int
from catalog.errors import ERROR, WARNING, Finding
from catalog.nemo_rl_version import NemoRLVersion, in_range
from runners.preflight import PreflightContext

UNRESOLVED = "???"
T = TypeVar("T")


def cite(version: NemoRLVersion | None, places: dict[str, T]) -> T:
    """The upstream `file:line` of the running version: `places` maps the oldest version each
    holds from ("0.6.0", "0.7.0", "pin"); unknown: the newest, older than all: the oldest."""
    if version is None:
        return places[list(places)[-1]]
    held = [p for s, p in places.items() if in_range(version, s if s == "pin" else f"{s}+")]
    return held[-1] if held else places[next(iter(places))]


def enabled(section: Any) -> bool:
    """`section.enabled` as upstream tests it (`.get("enabled", False)`)."""
    return isinstance(section, dict) and bool(section.get("enabled", False))


@dataclass(frozen=True)
class Layout:
    """The training side's parallelism; `backend` is 'megatron', 'dtensor' or None."""

    backend: str | None
    prefix: str  # config section holding the sizes, e.g. policy.megatron_cfg
    tp: int
    pp: int
    cp: int
    sequence_parallel: bool
    gpus: int | None  # the GPUs the policy trains on (see `training_gpus`)
    gpus_source: str = "cluster (num_nodes x gpus_per_node)"

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp * self.cp

    @property
    def dp(self) -> int | None:
        if not self.gpus or self.gpus % self.model_parallel:
            return None
        return self.gpus // self.model_parallel


TP_KEY = {"megatron": "tensor_model_parallel_size", "dtensor": "tensor_parallel_size"}


def layout(ctx: PreflightContext) -> Layout:
    """Backend and sizes, as `Policy.__init__` picks them (megatron first, then dtensor)."""
    policy = ctx.get("policy", {}) or {}
    gpus, source = training_gpus(ctx)
    for backend, tp_key in TP_KEY.items():
        cfg = policy.get(f"{backend}_cfg")
        if enabled(cfg):
            pp = cfg.get("pipeline_model_parallel_size") if backend == "megatron" else 1
            return Layout(
                backend,
                f"policy.{backend}_cfg",
                as_int(cfg.get(tp_key)) or 1,
                as_int(pp) or 1,
                as_int(cfg.get("context_parallel_size")) or 1,
                bool(cfg.get("sequence_parallel")),
                gpus,
                source,
            )
    return Layout(None, "policy", 1, 1, 1, False, gpus, source)


def _non_colocated(ctx: PreflightContext) -> dict | None:
    """`policy.generation.colocated.resources` when GRPO generates on GPUs of its own."""
    col = generation(ctx).get("colocated")
    if algorithm(ctx) != "grpo" or not isinstance(col, dict) or col.get("enabled", True):
        return None
    res = col.get("resources")
    return res if isinstance(res, dict) else {}


def teacher_nodes(ctx: PreflightContext) -> int:
    """Nodes GRPO reserves for non-colocated distillation teachers (v0.7.0 grpo.py:543-557, pin
    :782-801): `num_nodes` (default 1) per distinct teacher (teacher_worker_group.py:59-104)."""
    opd = ctx.get("on_policy_distillation")
    if not in_range(ctx.nemo_rl_version, "0.7.0+") or not enabled(opd):
        return 0
    teachers = opd.get("non_colocated_teachers")
    models = opd.get("teacher_model_by_agent_name")
    if not enabled(teachers) or not isinstance(models, dict):
        return 0
    default = teachers.get("default_teacher_cfg") or {}
    overrides = teachers.get("teacher_overrides") or {}
    dedup, seen, total = bool(opd.get("deduplicate_shared_teacher_checkpoints", True)), set(), 0
    for alias, model in models.items():
        if dedup and str(model) in seen:
            continue
        seen.add(str(model))
        merged = {**default, **(overrides.get(alias) or {})}
        total += as_int(merged.get("num_nodes", 1)) or 0
    return total


def reward_model(ctx: PreflightContext) -> tuple[int, int]:
    """(nodes, GPUs per node) GRPO holds for a reward model, (0, 0) when none runs: it runs when a
    data split names env `reward_model` (v0.6.0 grpo.py:398-408, v0.7.0 :456-531, pin :728-770),
    `data.env_name` does (v0.5.0 :298-309), or `env.reward_model.enabled` (v0.4.0 :292-293)."""
    env = ctx.get("env") or {}
    rm = env.get("reward_model") if isinstance(env, dict) else None
    if not isinstance(rm, dict):
        return 0, 0
    data = ctx.get("data") or {}
    if in_range(ctx.nemo_rl_version, "0.6.0+"):
        splits = [data.get(k) for k in ("train", "validation", "default")]
        on = any(isinstance(d, dict) and d.get("env_name") == "reward_model" for d in splits)
    elif in_range(ctx.nemo_rl_version, "0.5.0+"):
        on = data.get("env_name") == "reward_model"
    else:
        on = bool(rm.get("enabled"))
    res = rm.get("resources") if on else None
    if not isinstance(res, dict):
        return 0, 0
    return as_int(res.get("num_nodes")) or 0, as_int(res.get("gpus_per_node")) or 0


def training_gpus(ctx: PreflightContext) -> tuple[int | None, str]:
    """The GPUs the policy trains on and how they were counted, as grpo.setup splits the cluster
    (v0.6.0 grpo.py:398-506, v0.7.0 :520-660) among reward model, teachers and non-colocated
    generation; None when the split itself is invalid (E-COLOCATION, E-PARALLEL-FIT say why)."""
    total, per_node = as_int(ctx.get("cluster.num_nodes")), as_int(ctx.get("cluster.gpus_per_node"))
    whole = "cluster (num_nodes x gpus_per_node)"
    if not total or not per_node:
        return None, whole
    rm_nodes, rm_gpus = reward_model(ctx)
    rm_gpus = rm_gpus if total == 1 else 0  # one node: the reward model shares it
    teachers = teacher_nodes(ctx)
    nodes = total - teachers - (rm_nodes if total > 1 else 0)
    if nodes <= 0 or per_node - rm_gpus <= 0:
        return None, whole
    held = [f"{n} {what}" for n, what in ((rm_nodes, "reward model"), (teachers, "teachers"))]
    held = [h for h in held if not h.startswith("0 ")] if total > 1 else []
    if held:
        whole = f"training ({nodes} of {total} nodes; {', '.join(held)})"
    if rm_gpus:
        whole = f"training (gpus_per_node {per_node} - {rm_gpus} for the reward model)"
    res = _non_colocated(ctx)
    if res is None:
        return nodes * (per_node - rm_gpus), whole
    inf_gpus, inf_nodes = as_int(res.get("gpus_per_node")), as_int(res.get("num_nodes"))
    if nodes == 1:
        if not inf_gpus or inf_gpus + rm_gpus >= per_node:
            return None, whole
        rm = f" - {rm_gpus} for the reward model" if rm_gpus else ""
        return (
            per_node - inf_gpus - rm_gpus,
            f"training (gpus_per_node {per_node} - {inf_gpus} for generation{rm})",
        )
    if not inf_nodes or not 0 < inf_nodes < nodes:
        return None, whole
    train = (nodes - inf_nodes) * per_node
    held = [f"{inf_nodes} generate", *held]
    return train, f"training ({nodes - inf_nodes} of {total} nodes; {', '.join(held)})"


def generation_gpus(ctx: PreflightContext) -> int | None:
    """The GPUs vLLM runs on: the training cluster when colocated, else its own resources."""
    res = _non_colocated(ctx)
    if res is None:
        return training_gpus(ctx)[0]
    inf_gpus = as_int(res.get("gpus_per_node"))
    inf_nodes = as_int(res.get("num_nodes")) or 1
    return inf_gpus * inf_nodes if inf_gpus else None


def algorithm(ctx: PreflightContext) -> str | None:
    """The NeMo-RL algorithm the step runs (manifest `run.algorithm`), else guessed from keys."""
    manifest = ctx.manifest
    algo = getattr(getattr(manifest, "run", None), "algorithm", None)
    if algo:
        return algo
    for name in ("grpo", "dpo"):
        if name in ctx.config:
            return name
    return None


def uses_gym(ctx: PreflightContext) -> bool:
    return bool((ctx.get("env", {}) or {}).get("should_use_nemo_gym"))


def dataset_entries(ctx: PreflightContext) -> Iterator[tuple[str, dict, dict]]:
    """Each train/validation dataset entry (0.6.0+): its key, it merged over data.default
    (data/utils.py's update_single_dataset_config), and it as written."""
    default = ctx.get("data.default")
    default = default if isinstance(default, dict) else {}
    for split in ("train", "validation"):
        value = ctx.get(f"data.{split}")
        entries = value if isinstance(value, list) else [value]
        for i, entry in enumerate(entries):
            if isinstance(entry, dict):
                key = f"data.{split}[{i}]" if isinstance(value, list) else f"data.{split}"
                yield key, {**default, **entry}, entry


def strings(node: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted key, value) of every string in a plain config tree (list items as `[i]`)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from strings(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from strings(v, f"{prefix}[{i}]")
    elif isinstance(node, str):
        yield prefix, node


def generation(ctx: PreflightContext) -> dict:
    gen = ctx.get("policy.generation")
    return gen if isinstance(gen, dict) else {}


def config_location(ctx: PreflightContext) -> str | None:
    return str(ctx.config_file) if ctx.config_file else None


def where(ctx: PreflightContext, key: str | None) -> tuple[str | None, int | None]:
    """The file and line that set a key, when the runner passed the compiled config."""
    compiled = getattr(ctx, "compiled", None)
    if key and compiled is not None:
        absent = object()
        while "." in key and ctx.get(key, absent) is absent:
            key = key.rsplit(".", 1)[0]  # a missing key: where its section was last set
        try:
            path, line = compiled.locate(key)
        except Exception:  # a location is a courtesy; never lose the finding over it
            path, line = None, None
        if path is not None:
            return path, line
    return config_location(ctx), None


def located(
    ctx: PreflightContext, code: str, key: str | None, message: str, fix: str, severity: str = ERROR
) -> Finding:
    """A finding at the file and line that set `key` (`where`)."""
    path, line = where(ctx, key)
    return Finding(code, message, path, line, fix, severity, key)


def finding(ctx: PreflightContext, code: str, key: str, message: str, fix: str) -> Finding:
    """An error at a config key of the compiled config."""
    return located(ctx, code, key, f"{key}: {message}", fix)


def warning(ctx: PreflightContext, code: str, key: str | None, message: str, fix: str) -> Finding:
    return located(ctx, code, key, (f"{key}: " if key else "") + message, fix, WARNING)
