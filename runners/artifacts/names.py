"""Artifact names and references, in Nemotron's convention (the table in docs/running.md,
"Artifacts by name"). A reference never holds a `/`, so a path or a hub id is never read as one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

LATEST = "latest"
MODEL_ROOTS = ("hf_checkpoint", "megatron_checkpoint", "nemo_rl_checkpoint")
_PART = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_REF = re.compile(rf"^(?P<name>{_PART})(?::(?P<tag>{_PART}))?$")
_VERSION = re.compile(r"^v(\d+)$")
# What prepared data is for, by its (narrowed) type: the kind in its DataBlendsArtifact name.
DATA_FOR = {"preference_jsonl": "dpo", "verifiable_prompt_jsonl": "rl-prompts"}


@dataclass(frozen=True)
class Ref:
    """`name:tag`; `tagged` says whether the text named a tag (a bare name means `latest`)."""

    name: str
    tag: str = LATEST
    tagged: bool = False

    @property
    def version(self) -> int | None:
        """N for a `vN` tag, else None (an alias)."""
        m = _VERSION.match(self.tag)
        return int(m.group(1)) if m else None

    def __str__(self) -> str:
        return f"{self.name}:{self.tag}"


@dataclass
class Resolved:
    """What a reference named: the version's path and type, and where it was found."""

    port: str
    ref: Ref
    path: str
    type: str
    source: str  # "registry" or "wandb"
    version: str  # vN


def parse_ref(text: str) -> Ref | None:
    """The reference `text` spells, or None when it cannot be one (a path, a hub id)."""
    m = _REF.match(text.strip())
    if m is None:
        return None
    tag = m.group("tag")
    return Ref(m.group("name"), tag or LATEST, tag is not None)


def is_model(type_name: str, graph: Any = None) -> bool:
    """A checkpoint type (W&B: a model, logged by reference), else data."""
    known = graph is not None and type_name in graph
    return (known and any(graph.is_a(type_name, r) for r in MODEL_ROOTS)) or (
        "checkpoint" in type_name
    )


def artifact_name(step_id: str, type_name: str, model: bool, label: str | None = None) -> str:
    """The name an output of `step_id` is registered under (`label`: a pipeline stage)."""
    leaf = step_id.rsplit("/", 1)[-1]
    if step_id.startswith("data_prep/") and not model:
        return f"DataBlendsArtifact-{DATA_FOR.get(type_name, leaf.removesuffix('_prep'))}"
    if model:
        return f"ModelArtifact-{leaf}"
    return f"{type_name}-{label or leaf}"
