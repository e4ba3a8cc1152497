"""The output contract, applied to every row in-stream: the one validator lives in catalog."""

from __future__ import annotations

from collections.abc import Callable

from catalog.contracts.rows import RowViolation
from catalog.errors import StepsError

RowCheck = Callable[[dict], "RowViolation | None"]
Accept = Callable[[bytes], bool]


def row_check(output_type: str, routes: dict | None = None) -> tuple[RowCheck, Accept | None]:
    """The first contract error of a row (or None), and the contract's fast pre-filter of raw lines
    (or None); `routes`: Gym agents' task fields, checked too."""
    from catalog.contracts import get_row_contract
    from catalog.types import load_types

    graph = load_types()
    if output_type not in graph:
        raise StepsError(
            "E-CONFIG-VALUE",
            f"output_type: unknown artifact type `{output_type}`",
            key="output_type",
            fix="use nemo_gym_jsonl, preference_jsonl, verifiable_prompt_jsonl or training_jsonl",
        )
    options = {"routes": routes} if routes else {}
    contract = get_row_contract(graph.types[output_type].contract, **options)
    check = contract.check

    def first_problem(row: dict) -> RowViolation | None:
        # A warning (data quality the trainer accepts) never refuses a row; `validate` reports it.
        return next((v for v in check(row) if v.is_error), None)

    return first_problem, contract.accept
