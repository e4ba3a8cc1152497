"""One dataset of an rl_prep blend: the record `blend` parses and `transforms` and `sources` read.

It lives apart from `blend` so that the modules `blend` imports (options -> transforms) can name it
without importing `blend` back.
"""

from __future__ import annotations

from dataclasses import dataclass


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
