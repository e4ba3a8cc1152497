"""What upstream's example configs prove beyond the types: keys read with `.get`, and nulls.

NeMo-RL reads keys its TypedDicts never declare (`cfg.get("use_deep_gemm")`). Each YAML under
`examples/` whose resolved config has the algorithm's section is walked along the schema: an
undeclared key goes under `shipped` as `{parent path: {key: "examples/...yaml:line"}}` (list
items as `[]`, the first file in path order), its type unknown and nothing below it checked.
A null where the declared type has none (v0.6.0's `grpo.val_batch_size: int`, null in its own
NeMo-Gym example) goes under `shipped_null`, so it is accepted at that path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from catalog.yamlfile import Lines, compose, key_lines
from runners.nemo_rl.schema.builder import RECORDS, fields_of, options, takes_none

EXAMPLES = "examples"  # upstream's shipped configs, recipes and Gym examples live below this
LOADER_KEY = "defaults"  # consumed by NeMo-RL's config loader, never part of MasterConfig


class _Example(dict):
    """An example config's data with `lines`, the line of every key path (catalog.yamlfile)."""

    lines: Lines


def _load(text: str) -> Any:
    """The document's data, as a safe loader builds it, with its key lines from the same node
    tree (so a `<<`-merged key sits at the line of the value the loader kept)."""
    node = compose(text)
    if node is None:
        return None
    data = yaml.constructor.SafeConstructor().construct_document(node)
    if not isinstance(data, dict):
        return data
    doc = _Example(data)
    doc.lines = key_lines(node)
    return doc


def load_examples(checkout: Path) -> dict[Path, dict]:
    """Every YAML mapping under examples/ by path (a file that does not load proves nothing)."""
    out: dict[Path, dict] = {}
    root = checkout / EXAMPLES
    for path in sorted([*root.rglob("*.yaml"), *root.rglob("*.yml")]):
        try:
            doc = _load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        if isinstance(doc, dict):
            out[path.resolve()] = doc
    return out


def resolved_example(path: Path, docs: dict[Path, dict], seen: frozenset = frozenset()) -> dict:
    """An example config merged over its `defaults:` chain, as NeMo-RL's loader does."""
    doc = docs.get(path)
    if doc is None or path in seen:
        return {}
    parents = doc.get(LOADER_KEY)
    merged: dict = {}
    for parent in [parents] if isinstance(parents, str) else parents or []:
        if isinstance(parent, str):
            parent_path = Path(os.path.normpath(path.parent / parent))
            merged = _merged(merged, resolved_example(parent_path, docs, seen | {path}))
    child = {k: v for k, v in doc.items() if k != LOADER_KEY}
    for key, value in child.items():
        if isinstance(value, dict) and value.get("_override_"):
            merged.pop(key, None)
    return _merged(merged, child)


def _merged(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        elif value != "???" or key not in out:
            out[key] = value
    return out


class ShippedWalker:
    """Walks an example config along the schema, recording undeclared keys and nulls."""

    def __init__(self, classes: dict, source: str, lines: Lines) -> None:
        self.classes = classes
        self.source = source
        self.lines = lines
        self.found: dict[str, dict[str, str]] = {}
        self.nulls: dict[str, dict[str, str]] = {}

    def walk(self, value: Any, t: dict, path: str, at: tuple = ()) -> None:
        """Walk `value` (at key path `at` in the file, `path` in the schema) as type `t`."""
        kinds = options(t)
        refs = [
            o["name"]
            for o in kinds
            if o["t"] == "ref" and self.classes.get(o["name"], {}).get("kind") in RECORDS
        ]
        if refs and isinstance(value, dict):  # a key is undeclared only if no branch declares it
            self.walk_class(value, [fields_of(self.classes, name) for name in refs], path, at)
        for o in kinds:
            if o["t"] == "list" and isinstance(value, list):
                for i, item in enumerate(value):
                    self.walk(item, o["item"], f"{path}[]", (*at, i))
            elif o["t"] == "dict" and isinstance(value, dict) and o["value"]["t"] != "any":
                for k, v in value.items():
                    self.walk(v, o["value"], _join(path, k), (*at, str(k)))

    def walk_class(self, value: dict, branches: list[dict], path: str, at: tuple) -> None:
        for key, v in value.items():
            if not path and key == LOADER_KEY:
                continue
            declared = [fields[key]["type"] for fields in branches if key in fields]
            for t in declared:
                self.walk(v, t, _join(path, key), (*at, str(key)))
            line = self.lines.get((*at, str(key)))
            where = f"{self.source}:{line}" if line else self.source
            if not declared:
                self.found.setdefault(path, {}).setdefault(str(key), where)
            elif v is None and not any(takes_none(t) for t in declared):
                self.nulls.setdefault(path, {}).setdefault(str(key), where)


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _merge(into: dict, found: dict) -> None:
    for parent, keys in found.items():
        for key, where in keys.items():
            into.setdefault(parent, {}).setdefault(key, where)


def _sorted(found: dict) -> dict:
    return {parent: dict(sorted(keys.items())) for parent, keys in sorted(found.items())}


def shipped_keys(
    checkout: Path, docs: dict[Path, dict], algorithm: str, classes: dict, root: str
) -> tuple[dict, dict]:
    """(shipped, shipped_null) for one algorithm from the loaded example configs."""
    found: dict[str, dict[str, str]] = {}
    nulls: dict[str, dict[str, str]] = {}
    for path, doc in docs.items():
        if algorithm not in resolved_example(path, docs):
            continue
        source = path.relative_to(checkout.resolve()).as_posix()
        walker = ShippedWalker(classes, source, getattr(doc, "lines", {}))
        walker.walk(doc, {"t": "ref", "name": root}, "")
        _merge(found, walker.found)
        _merge(nulls, walker.nulls)
    return _sorted(found), _sorted(nulls)
