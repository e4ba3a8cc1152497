"""Artifact contracts: what a real file or folder of each artifact type must satisfy.

Row contracts (`get_row_contract`) check one parsed JSONL row at a time, fast enough to run on
every row in-stream; `validate_artifact` checks a whole artifact by its type's `contract` in
types.toml.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from catalog.contracts.registry import CHECKPOINT_CONTRACTS, ROW_CONTRACTS, get_row_contract

if TYPE_CHECKING:
    from catalog.contracts.validation import validate_artifact

__all__ = ["CHECKPOINT_CONTRACTS", "ROW_CONTRACTS", "get_row_contract", "validate_artifact"]


def __getattr__(name: str) -> Any:
    """`validate_artifact` (validation.py) imported on first use: a row check needs none of it."""
    if name == "validate_artifact":
        from catalog.contracts.validation import validate_artifact

        return validate_artifact
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
