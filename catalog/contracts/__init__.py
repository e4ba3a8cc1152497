"""Artifact contracts: what a real file or folder of each artifact type must satisfy.

Row contracts (`get_row_contract`) check one parsed JSONL row at a time, fast enough to run on
every row in-stream; `validate_artifact` checks a whole artifact (a JSONL file, a folder of
shards, an rl_prep manifest, or a checkpoint folder) by its type's `contract` in types.toml.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from catalog.contracts.registry import (
    BLANK_LINE_ERRORS,
    CHECKPOINT_CONTRACTS,
    ROW_ACCEPTS,
    ROW_CONTRACTS,
    RowContract,
    get_row_contract,
)
from catalog.contracts.rows import RowViolation

if TYPE_CHECKING:
    from catalog.contracts.validation import validate_artifact

__all__ = [
    "BLANK_LINE_ERRORS",
    "CHECKPOINT_CONTRACTS",
    "ROW_ACCEPTS",
    "ROW_CONTRACTS",
    "RowContract",
    "RowViolation",
    "get_row_contract",
    "validate_artifact",
]


def __getattr__(name: str) -> Any:
    """`validate_artifact` (validation.py) imported on first use: a row check needs none of it."""
    if name == "validate_artifact":
        from catalog.contracts.validation import validate_artifact

        return validate_artifact
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
