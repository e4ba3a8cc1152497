"""Deterministic split and weight decisions from a row's content, the seed and its dataset (see
steps/data_prep/rl_prep/README.md, "Splits and weights"). XXH3, not a cryptographic hash: the
split needs only uniform, reproducible numbers at several GB/s."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import xxhash

TRAIN, VAL, TEST = "train", "val", "test"
SPLITS = (TRAIN, VAL, TEST)
_ONE = 1 << 64
_LOW = _ONE - 1


def _cut(fraction: float) -> int:
    """The integer threshold below which a uniform 64-bit number falls with `fraction` odds."""
    return min(_ONE, math.floor(fraction * _ONE))


@dataclass(frozen=True)
class Splitter:
    """Split and repeat decisions for one dataset."""

    seed: int
    dataset: str
    train_ratio: float
    val_ratio: float
    weight: float = 1.0
    _key: int = field(init=False, repr=False)
    _train_cut: int = field(init=False, repr=False)
    _val_cut: int = field(init=False, repr=False)
    _whole: int = field(init=False, repr=False)
    _extra_cut: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(f"rl_prep\0{self.seed}\0{self.dataset}\0".encode()).digest()
        whole = math.floor(self.weight)
        for name, value in (
            ("_key", int.from_bytes(digest[:8], "big")),
            ("_train_cut", _cut(self.train_ratio)),
            ("_val_cut", _cut(self.train_ratio + self.val_ratio)),
            ("_whole", whole),
            ("_extra_cut", _cut(self.weight - whole)),
        ):
            object.__setattr__(self, name, value)

    def decide(self, content: bytes) -> tuple[str, int, int]:
        """A row's split, its `u` (below 2**64) and how many times it is written."""
        h = xxhash.xxh3_128_intdigest(content, self._key)
        u = h >> 64
        if u >= self._train_cut:
            return (VAL if u < self._val_cut else TEST), u, 1
        return TRAIN, u, self._whole + ((h & _LOW) < self._extra_cut)
