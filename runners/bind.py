"""Bind the artifacts a manifest declares to the config keys that hold their paths.

A config file's relative input for NeMo-RL stays as written: NeMo-RL opens it from its checkout
root (v0.7.0 nemogym_dataset.py:35). Other relative paths are read from the file's folder
(overrides and `--input`: the current directory) and written back absolute. An rl_prep
`manifest.json` binds its train and val splits; Gym rows without `agent_ref` get
`run.default_agent_ref` in a copy in the run dir. A `pending` input (an earlier pipeline stage
writes it) is derived when the job starts (`runners.pipeline.materialize`, `inputs/deferred.json`).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from catalog.artifact_paths import absolute, is_hub_id
from catalog.errors import StepsError
from catalog.record_file import read_json
from runners.config.overrides import override_keys
from runners.config.values import resolved_value
from runners.omegaconf_internals import child_node, is_interpolation, is_missing, is_none
from runners.preflight import BoundArtifact

JSONL_ROOT = "training_jsonl"
HF_ROOT = "hf_checkpoint"
MANIFEST_NAME = "manifest.json"
SPLIT_OF_PORT = {"train": "train", "validation": "val", "val": "val", "test": "test"}
DEFERRED = "inputs/deferred.json"


@dataclass
class Derived:
    """Rows the runner writes into the run dir before exec (concatenated or normalized)."""

    relpath: str
    sources: list[Path]
    agent_ref: dict | None = None
    port: str = ""

    def write(self, run_dir: Path) -> None:
        """Written aside, then renamed: never half there."""
        out = run_dir / self.relpath
        out.parent.mkdir(parents=True, exist_ok=True)
        aside = out.with_name(f".partial-{out.name}")
        try:
            with aside.open("w", encoding="utf-8") as dst:
                for src in self.sources:
                    with src.open(encoding="utf-8") as fh:
                        dst.writelines(_with_agent_ref(line, self.agent_ref) for line in fh)
            aside.replace(out)
        finally:
            aside.unlink(missing_ok=True)


def _with_agent_ref(line: str, agent_ref: dict | None) -> str:
    text = line.rstrip("\n")
    if agent_ref is not None and text.strip():
        try:
            row = json.loads(text)
        except ValueError:
            row = None  # the row contract check reports it; copy it through unchanged
        if isinstance(row, dict) and "agent_ref" not in row:
            text = json.dumps({**row, "agent_ref": agent_ref}, ensure_ascii=False)
    return text + "\n"


@dataclass
class Binding:
    inputs: list[BoundArtifact] = field(default_factory=list)
    outputs: list[BoundArtifact] = field(default_factory=list)
    derived: list[Derived] = field(default_factory=list)
    later: list[dict] = field(default_factory=list)  # read by runners.pipeline.materialize

    def materialize(self, run_dir: Path) -> None:
        for d in [d for d in self.derived if d.sources]:  # none: derived when the job starts
            d.write(run_dir)
        if self.later:
            (run_dir / DEFERRED).parent.mkdir(exist_ok=True)
            (run_dir / DEFERRED).write_text(json.dumps(self.later, indent=1), encoding="utf-8")


@dataclass
class _Target:
    parent: Any  # DictConfig holding the leaf
    leaf: str
    key: str  # concrete dotted key (list items numbered)


def _targets(cfg: DictConfig, dotted: str, create: bool = False) -> list[_Target]:
    """Where a dotted key lives; a list on the way fans out to each of its entries."""
    parts = dotted.split(".")
    found: list[_Target] = []

    def walk(node: Any, i: int, prefix: str) -> None:
        part = parts[i]
        key = f"{prefix}.{part}" if prefix else part
        if isinstance(node, ListConfig):
            for j in range(len(node)):
                walk(child_node(node, j), i, f"{prefix}.{j}" if prefix else str(j))
            return
        if not isinstance(node, DictConfig):
            return
        if i == len(parts) - 1:
            if child_node(node, part) is not None or create:
                found.append(_Target(node, part, key))
            return
        child = child_node(node, part)
        if (child is None or is_none(child) or is_missing(child)) and create:
            node[part] = {}
            child = child_node(node, part)
        if child is not None and not is_interpolation(child):
            walk(child, i + 1, key)

    walk(cfg, 0, "")
    return found


def _from_overrides(key: str, keys: list[str]) -> bool:
    generic = re.sub(r"\.\d+(?=\.|$)", "", key)
    return any(
        k in (key, generic) or key.startswith(k + ".") or generic.startswith(k + ".") for k in keys
    )


def _read_manifest(path: Path) -> tuple[Path, dict] | None:
    """(manifest file, data) when `path` is an rl_prep manifest or a folder holding one."""
    cand = path / MANIFEST_NAME if path.is_dir() else path
    if cand.name != MANIFEST_NAME or not cand.is_file():
        return None
    try:
        data = read_json(cand)
    except (OSError, ValueError) as exc:
        raise StepsError(
            "E-INPUT-MANIFEST",
            f"cannot read the data manifest: {exc}",
            path=str(cand),
            fix="point the input at an rl_prep output folder or its manifest.json",
            exit_code=2,
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("splits"), dict):
        return None
    return cand, data


def _split_shards(manifest: Path, data: dict, split: str, port: str) -> list[tuple[Path, Any]]:
    """Each shard of `split`: its path and the row count the manifest records."""
    shards = ((data["splits"].get(split) or {}).get("shards")) or []
    listed = [s for s in shards if isinstance(s, dict) and "path" in s]
    paths = [(manifest.parent / s["path"], s.get("rows")) for s in listed]
    if not paths:
        raise StepsError(
            "E-INPUT-MANIFEST",
            f"the data manifest has no shards in split '{split}' for input '{port}'",
            path=str(manifest),
            fix=f"prepare data with a {split} split, or give --input {port}=FILE",
            exit_code=2,
        )
    return paths


def _needs_agent_ref(path: Path) -> bool:
    """True when some row lacks `agent_ref` (a cheap substring test first, JSON only if needed)."""
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip() and '"agent_ref"' not in line:
                    try:
                        row = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(row, dict) and "agent_ref" not in row:
                        return True
    except (OSError, UnicodeDecodeError):
        return False
    return False


def _narrowed(port: Any, cfg: DictConfig, graph: Any) -> str:
    """An output's type narrowed by its `type_key` (rl_prep's output_type), else the port's."""
    if not port.type_key or graph is None:
        return str(port.type)
    from catalog.types import mapped_type

    value = mapped_type(port.model_dump(), resolved_value(cfg, port.type_key))
    if isinstance(value, str) and value in graph and graph.is_a(value, port.type):
        return value
    return str(port.type)


def bind(
    compiled: Any,
    manifest: Any,
    *,
    config_file: Path,
    cwd: Path,
    inputs: dict[str, str],
    run_dir: Path,
    output_base: Path,
    graph: Any = None,
    workdir: str | None = None,
    opens_from_workdir: bool = False,
    pending: frozenset[str] = frozenset(),
) -> Binding:
    """Bind every port, mutating `compiled.config` (paths absolute, derived files).
    `opens_from_workdir`: the program opens relative inputs from `workdir` (None: not known
    here). `pending`: ports given an output an earlier pipeline stage has not written yet."""
    from runners.config.compiler import register_resolvers

    register_resolvers()
    cfg: DictConfig = compiled.config
    names = [p.name for p in [*manifest.consumes, *manifest.produces]]
    if unknown := sorted(set(inputs) - set(names)):
        raise StepsError(
            "E-INPUT-NAME",
            f"--input {unknown[0]}: the step has no port of that name",
            fix=f"use one of: {', '.join(names)}",
            exit_code=2,
        )
    is_a = (lambda t, root: graph.is_a(t, root)) if graph is not None else (lambda t, r: t == r)
    keys_overridden = override_keys(compiled.overrides)
    gym = resolved_value(cfg, "env.should_use_nemo_gym") is True
    agent_ref = resolved_value(cfg, "run.default_agent_ref") if gym else None
    agent_ref = agent_ref if isinstance(agent_ref, dict) else None
    binding = Binding()
    manifests: dict[str, tuple[Path, dict]] = {}

    ports = [(p, True) for p in manifest.consumes] + [(p, False) for p in manifest.produces]
    for port, consumed in ports:
        given = inputs.get(port.name)
        jsonl = consumed and is_a(port.type, JSONL_ROOT)
        for dotted in port.config_keys:
            for t in _targets(cfg, dotted, create=given is not None):
                later = absolute(given, cwd) if given and consumed and port.name in pending else ""
                if later and _defer(binding, t, port, later, run_dir, agent_ref, is_a):
                    continue
                if given is not None:
                    value, base = given, cwd
                else:
                    node = child_node(t.parent, t.leaf)
                    if node is None or is_missing(node) or is_none(node):
                        if port.required and consumed and node is not None and is_none(node):
                            binding.inputs.append(BoundArtifact(port.name, port.type, t.key, ""))
                        continue
                    value = resolved_value(cfg, t.key)
                    if not isinstance(value, str):
                        continue
                    if origin_cwd := _from_overrides(t.key, keys_overridden):
                        base = cwd
                    elif consumed:  # the folder of the file that set it, else the -c file's
                        declared, _ = compiled.locate(t.key)
                        base = Path(declared).parent if declared else config_file.parent
                    else:
                        base = output_base
                    if os.path.isabs(value) and not is_interpolation(node):
                        base = cwd  # already absolute: normpath only
                    elif consumed and opens_from_workdir and not origin_cwd:
                        hf = is_a(port.type, HF_ROOT)
                        art = _opened_in(port, t.key, value, workdir, base, hf, jsonl)
                        if art is not None:  # kept; rows lacking agent_ref get a copy
                            binding.inputs.append(art)
                            rows = [Path(art.value)] if jsonl and agent_ref and art.is_path else []
                            if rows and _needs_agent_ref(rows[0]):
                                _derive(binding, t, port.name, rows, run_dir, agent_ref)
                            continue
                if consumed and is_a(port.type, HF_ROOT) and is_hub_id(value, base):
                    binding.inputs.append(BoundArtifact(port.name, port.type, t.key, value, False))
                    if given is not None:
                        t.parent[t.leaf] = value
                    continue
                path = absolute(value, base)
                found = _read_manifest(Path(path)) if jsonl else None
                if found is not None:
                    manifests[port.name] = found
                    _bind_split(binding, t, port, manifest, found, run_dir, agent_ref)
                    continue
                if given is not None or value != path:  # an interpolation yielding it stays
                    t.parent[t.leaf] = path
                kind = port.type if consumed else _narrowed(port, cfg, graph)
                art = BoundArtifact(port.name, kind, t.key, path)
                (binding.inputs if consumed else binding.outputs).append(art)
                if jsonl and agent_ref is not None and _needs_agent_ref(Path(path)):
                    _derive(binding, t, port.name, [Path(path)], run_dir, agent_ref)

    # A manifest given for one JSONL port also feeds its sibling splits (unless the sibling
    # was given by --input or an override): the prepared splits belong together.
    if manifests:
        found = next(iter(manifests.values()))
        for port in manifest.consumes:
            if port.name in manifests or port.name in inputs or not is_a(port.type, JSONL_ROOT):
                continue
            split = SPLIT_OF_PORT.get(port.name)
            if split is None or not (found[1]["splits"].get(split) or {}).get("shards"):
                continue
            binding.inputs = [a for a in binding.inputs if a.name != port.name]
            binding.derived = [d for d in binding.derived if d.port != port.name]
            for dotted in port.config_keys:
                for t in _targets(cfg, dotted):
                    node = child_node(t.parent, t.leaf)
                    if node is not None and not _from_overrides(t.key, keys_overridden):
                        _bind_split(binding, t, port, manifest, found, run_dir, agent_ref)
    return binding


def _opened_in(
    port: Any, key: str, value: str, workdir: str | None, declared: Path, hf: bool, jsonl: bool
) -> BoundArtifact | None:
    """A relative path NeMo-RL opens from `workdir`, kept as written (None: bind it as usual)."""
    if os.path.isabs(value):
        return None
    beside = absolute(value, declared)
    if hf and is_hub_id(value, workdir or declared):
        return None
    joined = posixpath.normpath(posixpath.join(workdir, value)) if workdir else None
    if jsonl and any(_read_manifest(Path(p)) for p in (beside, joined) if p):
        return None
    if joined is None:
        return BoundArtifact(port.name, port.type, key, "", False, written=value, beside=beside)
    return BoundArtifact(port.name, port.type, key, joined, written=value, beside=beside)


def _bind_split(binding, t, port, manifest, found, run_dir, agent_ref) -> None:
    mpath, data, name = *found, port.name
    split = SPLIT_OF_PORT.get(name, name)
    listed = _split_shards(mpath, data, split, name)
    shards = [path for path, _ in listed]
    for path, rows in listed:
        expected = rows if isinstance(rows, int) and not isinstance(rows, bool) else None
        binding.inputs.append(
            BoundArtifact(port.name, port.type, t.key, str(path), expected_rows=expected)
        )
    fill = agent_ref if agent_ref is not None and any(_needs_agent_ref(s) for s in shards) else None
    entry_key, _, leaf = t.key.rpartition(".")
    entry = t.parent
    as_list = (
        len(shards) > 1
        and fill is None
        and manifest.run.algorithm == "grpo"
        and entry_key
        and isinstance(entry, DictConfig)
    )
    if len(shards) == 1 and fill is None:
        t.parent[t.leaf] = str(shards[0])
    elif as_list:
        grand, _, entry_leaf = entry_key.rpartition(".")
        holder = OmegaConf.select(t.parent._get_root(), grand) if grand else t.parent._get_root()
        raw = OmegaConf.to_container(entry, resolve=False)
        holder[entry_leaf] = [{**raw, leaf: str(s)} for s in shards]  # GRPO: one entry per shard
    else:
        _derive(binding, t, name, shards, run_dir, fill)


def _defer(binding: Binding, t: _Target, port: Any, path: str, run_dir: Path, fill, is_a) -> bool:
    """Rows or a checkpoint not written yet: bound to what the job derives (False: other types)."""
    rows, ckpt = is_a(port.type, JSONL_ROOT), is_a(port.type, "nemo_rl_checkpoint")
    if rows or ckpt:
        binding.inputs.append(BoundArtifact(port.name, port.type, t.key, path))
        rel = _derive(binding, t, port.name, [], run_dir, fill) if rows else f"inputs/{port.name}"
        t.parent[t.leaf] = str(run_dir / rel)
        binding.later.append({"relpath": rel, "source": path, "port": port.name, "rows": rows,
                              "type": port.type, "key": t.key, "agent_ref": fill})  # fmt: skip
    return rows or ckpt


def _derive(
    binding: Binding,
    t: _Target,
    name: str,
    sources: list[Path],
    run_dir: Path,
    agent_ref: dict | None,
) -> str:
    used = {d.relpath for d in binding.derived}
    rel = f"inputs/{name}.jsonl"
    i = 1
    while rel in used:
        rel, i = f"inputs/{name}_{i}.jsonl", i + 1
    binding.derived.append(Derived(rel, sources, agent_ref, name))
    t.parent[t.leaf] = str(run_dir / rel)
    return rel
