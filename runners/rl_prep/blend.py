"""The blend file: which datasets to prepare, how to weight and transform them, how to split.

A blend is JSON or YAML (JSON is read by the YAML parser, so one loader serves both and every
error can name its line):

    seed: 1234              # optional; overrides the step config's `seed`
    train_ratio: 0.98       # optional; overrides `train_ratio` (val_ratio likewise)
    shard_size: 256MB       # optional; overrides `shard_size`
    datasets:
      - name: math                      # unique; names the dataset in the manifest
        path: data/math.jsonl           # file, glob, directory, list of those, or hf://org/name
        split: train                    # hf:// only: which split of the hub dataset
        subset: default                 # hf:// only: the config (subset) name
        weight: 1.0                     # train repeat factor (see split.py)
        sample: 100                     # optional: read only the first N rows
        transform: nemo_gym             # nemo_gym | preference | nemotron_rl | passthrough
        agent_ref: math_simple_agent    # default agent for NeMo-Gym rows (a name or {type, name})
"""

from __future__ import annotations

import difflib
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from catalog.errors import StepsError
from runners.rl_prep.transforms import TRANSFORMS

TOP_KEYS = {"datasets", "seed", "train_ratio", "val_ratio", "shard_size", "description"}
DATASET_KEYS = {
    "name",
    "path",
    "split",
    "subset",
    "weight",
    "sample",
    "transform",
    "agent_ref",
    "description",
}
BLEND_FIX = "see steps/data_prep/rl_prep/README.md for the blend format"


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset of the blend, with paths still as written (resolved by `sources`)."""

    name: str
    paths: tuple[str, ...]
    line: int | None
    weight: float = 1.0
    split: str = "train"
    subset: str | None = None
    sample: int | None = None
    transform: str | None = None
    agent_ref: dict | None = None


@dataclass(frozen=True)
class Blend:
    path: Path
    sha256: str
    datasets: tuple[DatasetSpec, ...]
    options: dict[str, Any] = field(default_factory=dict)  # seed/ratios/shard_size it sets

    @property
    def folder(self) -> Path:
        return self.path.parent


def _fail(path: Path, message: str, line: int | None = None, fix: str = BLEND_FIX) -> StepsError:
    return StepsError("E-BLEND", message, path=str(path), line=line, fix=fix)


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _mapping_lines(node: yaml.Node) -> dict[str, int]:
    """Key -> 1-based line for a YAML mapping node (for errors that point at a key)."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: _line(k) for k, _ in node.value if isinstance(k, yaml.ScalarNode)}


def _unknown_key(path: Path, key: str, allowed: set[str], line: int | None, where: str) -> None:
    near = difflib.get_close_matches(key, sorted(allowed), n=1)
    hint = f"did you mean `{near[0]}`? " if near else ""
    raise _fail(
        path,
        f"{where}: unknown key `{key}`",
        line,
        fix=f"{hint}allowed keys: {', '.join(sorted(allowed))}",
    )


def _agent_ref(value: Any, path: Path, line: int | None, where: str) -> dict | None:
    if value is None:
        return None
    if isinstance(value, str) and value:
        return {"type": "responses_api_agents", "name": value}
    if isinstance(value, dict) and isinstance(value.get("name"), str) and value["name"]:
        return {"type": value.get("type", "responses_api_agents"), "name": value["name"]}
    raise _fail(
        path,
        f"{where}.agent_ref: expected an agent name or {{type, name}}, got {value!r}",
        line,
        fix="write `agent_ref: <agent instance name>` as named in your Gym config",
    )


def _number(value: Any, path: Path, line: int | None, key: str, *, low: float = 0.0) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < low:
        raise _fail(path, f"{key}: expected a number >= {low}, got {value!r}", line)
    return float(value)


def _dataset(item: Any, node: yaml.Node, index: int, path: Path) -> DatasetSpec:
    where = f"datasets[{index}]"
    line = _line(node)
    if not isinstance(item, dict):
        raise _fail(path, f"{where}: expected a mapping with name and path", line)
    lines = _mapping_lines(node)
    for key in item:
        if key not in DATASET_KEYS:
            _unknown_key(path, str(key), DATASET_KEYS, lines.get(str(key), line), where)
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _fail(path, f"{where}: `name` is required (a non-empty string)", line)
    where = f"datasets[{index}] ({name})"
    raw_paths = item.get("path")
    paths = [raw_paths] if isinstance(raw_paths, str) else raw_paths
    if not paths or not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise _fail(
            path,
            f"{where}: `path` is required: a file, glob, directory, list of those, or hf://org/name",
            lines.get("path", line),
        )
    transform = item.get("transform")
    if transform is not None and transform not in TRANSFORMS:
        near = difflib.get_close_matches(str(transform), list(TRANSFORMS), n=1)
        hint = f"did you mean `{near[0]}`? " if near else ""
        raise _fail(
            path,
            f"{where}.transform: unknown transform `{transform}`",
            lines.get("transform", line),
            fix=f"{hint}use one of: {', '.join(TRANSFORMS)}",
        )
    weight = item.get("weight", 1.0)
    weight = _number(weight, path, lines.get("weight", line), f"{where}.weight")
    sample = item.get("sample")
    if sample is not None and (
        not isinstance(sample, int) or isinstance(sample, bool) or sample < 1
    ):
        raise _fail(
            path,
            f"{where}.sample: expected a positive integer, got {sample!r}",
            lines.get("sample"),
        )
    for key in ("split", "subset"):
        if item.get(key) is not None and not isinstance(item[key], str):
            raise _fail(path, f"{where}.{key}: expected a string", lines.get(key, line))
    return DatasetSpec(
        name=name,
        paths=tuple(paths),
        line=line,
        weight=weight,
        split=item.get("split") or "train",
        subset=item.get("subset"),
        sample=sample,
        transform=transform,
        agent_ref=_agent_ref(item.get("agent_ref"), path, lines.get("agent_ref", line), where),
    )


def load_blend(path: Path) -> Blend:
    """Parse and check a blend file; every problem is an E-BLEND error with file and line."""
    try:
        data_bytes = path.read_bytes()
    except FileNotFoundError:
        raise _fail(
            path, "blend file not found", fix="set blend_path to an existing JSON or YAML blend"
        ) from None
    except OSError as exc:
        raise _fail(path, f"cannot read the blend: {exc.strerror}") from None
    try:
        text = data_bytes.decode("utf-8")
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except UnicodeDecodeError:
        raise _fail(path, "the blend is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise _fail(path, f"invalid JSON/YAML: {problem}", line) from None
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise _fail(path, "expected a mapping with a `datasets` list", 1)
    top_lines = _mapping_lines(node)
    for key in data:
        if key not in TOP_KEYS:
            _unknown_key(path, str(key), TOP_KEYS, top_lines.get(str(key)), "blend")
    ds_node = next((v for k, v in node.value if getattr(k, "value", None) == "datasets"), None)
    items = data.get("datasets")
    if not isinstance(items, list) or not items or not isinstance(ds_node, yaml.SequenceNode):
        raise _fail(path, "`datasets` must be a non-empty list", top_lines.get("datasets", 1))
    specs = [
        _dataset(item, n, i, path)
        for i, (item, n) in enumerate(zip(items, ds_node.value, strict=True))
    ]
    seen: dict[str, int | None] = {}
    for spec in specs:
        if spec.name in seen:
            raise _fail(
                path,
                f"dataset name `{spec.name}` is used twice (first at line {seen[spec.name]})",
                spec.line,
                fix="give every dataset a unique name",
            )
        seen[spec.name] = spec.line
    options: dict[str, Any] = {}
    for key in ("train_ratio", "val_ratio"):
        if key in data:
            options[key] = _number(data[key], path, top_lines.get(key), key)
    if "seed" in data:
        if not isinstance(data["seed"], int) or isinstance(data["seed"], bool):
            raise _fail(path, f"seed: expected an integer, got {data['seed']!r}", top_lines["seed"])
        options["seed"] = data["seed"]
    if "shard_size" in data:
        options["shard_size"] = data["shard_size"]
    return Blend(
        path=path,
        sha256=hashlib.sha256(data_bytes).hexdigest(),
        datasets=tuple(sorted(specs, key=lambda s: s.name)),
        options=options,
    )
