"""Artifact contracts: what a real file or folder of each artifact type must satisfy.

Row contracts (`get_row_contract`) check one parsed JSONL row at a time, fast enough to run on
every row in-stream; `validate_artifact` checks a whole artifact (a JSONL file, a folder of
shards, an rl_prep manifest, or a checkpoint folder) by its type's `contract` in types.toml.
"""

from __future__ import annotations

from typing import Any

from catalog.contracts.registry import (
    BLANK_LINE_ERRORS,
    CHECKPOINT_CONTRACTS,
    ROW_ACCEPTS,
    ROW_CONTRACTS,
    RowContract,
    get_row_contract,
)
from catalog.contracts.rows import RowViolation

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


def validate_artifact(
    type_name: str,
    path: Any,
    *,
    options: dict[str, Any] | None = None,
    max_errors: int = 20,
    progress: Any = None,
    allow_hub_id: bool = False,
    graph: Any = None,
    workers: int | None = None,
    expected_rows: int | None = None,
):
    """Validate one artifact by its type's contract; a `ValidationReport`, never a traceback."""
    from catalog.contracts.validation import validate_artifact as run

    return run(
        type_name,
        path,
        options=options,
        max_errors=max_errors,
        progress=progress,
        allow_hub_id=allow_hub_id,
        graph=graph,
        workers=workers,
        expected_rows=expected_rows,
    )
