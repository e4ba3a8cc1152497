"""The output contract, applied to every row in-stream: the one validator lives in catalog."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catalog.errors import StepsError


@dataclass(frozen=True)
class RowProblem:
    """The first violation of a row, in the form rl_prep reports and counts."""

    code: str
    field: str | None
    message: str
    fix: str | None


RowCheck = Callable[[dict], "RowProblem | None"]
Accept = Callable[[bytes], bool]


def _field(v: Any, name: str) -> Any:
    return v.get(name) if isinstance(v, dict) else getattr(v, name, None)


def row_check(output_type: str, routes: dict | None = None) -> tuple[RowCheck, Accept | None]:
    """The first contract violation of a row of `output_type` (or None), and the contract's
    fast pre-filter of raw lines (None when the contract has none). `routes` (Gym rows only:
    agent -> the task fields its resource server reads) checks those fields too."""
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

    def first_problem(row: dict) -> RowProblem | None:
        violations = check(row)
        if not violations:
            return None
        # A warning (data quality the trainer accepts) never refuses a row; `validate` reports it.
        v = next((v for v in violations if getattr(v, "is_error", True)), None)
        if v is None:
            return None
        return RowProblem(
            str(_field(v, "code")), _field(v, "field"), str(_field(v, "message")), _field(v, "fix")
        )

    return first_problem, contract.accept
