"""Deterministic split and weight decisions from a row's content, the seed and its dataset.

Each row gets two numbers in [0, 1) from one SHA-256 of (seed, dataset name, row content),
where content is the source line without surrounding whitespace (JSONL) or the row's canonical
JSON (Parquet/Arrow):
- `u` picks the split: u < train_ratio -> train, u < train_ratio + val_ratio -> val, else test.
  A row's split therefore depends on nothing but its content, the seed and its dataset's name:
  not on file order, other rows or other datasets. Identical rows land in the same split, so
  duplicates never leak from train into val or test.
- `v` implements the weight, which applies to train only (held-out rows are written once):
  a train row is written floor(weight) times, plus once more when v < frac(weight). So weight 2
  doubles a dataset, 0.25 keeps a deterministic quarter of its train rows, 0 keeps none.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

TRAIN, VAL, TEST = "train", "val", "test"
SPLITS = (TRAIN, VAL, TEST)
_SCALE = float(1 << 64)


@dataclass(frozen=True)
class Splitter:
    """Split and repeat decisions for one dataset."""

    seed: int
    dataset: str
    train_ratio: float
    val_ratio: float
    weight: float = 1.0

    def key(self) -> Any:
        """The hash state of (seed, dataset), copied for every row of the dataset."""
        return hashlib.sha256(f"rl_prep\0{self.seed}\0{self.dataset}\0".encode())

    def decide(self, content: bytes, key: Any) -> tuple[str, float, int]:
        """A row's split, its `u`, and how many times it is written (1 outside train);
        `key` is `self.key()`, computed once per dataset."""
        h = key.copy()
        h.update(content)
        digest = h.digest()
        u = int.from_bytes(digest[:8], "big") / _SCALE
        if u >= self.train_ratio:
            return (VAL if u < self.train_ratio + self.val_ratio else TEST), u, 1
        whole = math.floor(self.weight)
        if whole == self.weight:
            return TRAIN, u, whole
        v = int.from_bytes(digest[8:16], "big") / _SCALE
        return TRAIN, u, whole + (1 if v < self.weight - whole else 0)
