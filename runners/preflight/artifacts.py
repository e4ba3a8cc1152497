"""Preflight: every bound input artifact that is a local path passes its type's contract."""

from __future__ import annotations

import os
from collections.abc import Iterator

from catalog.contracts import CHECKPOINT_CONTRACTS, ROW_CONTRACTS, validate_artifact
from catalog.contracts.options import contract_options, row_contract_for
from catalog.errors import Finding
from catalog.types import load_catalog_types
from runners.preflight import PreflightContext, rule
from runners.preflight.gym import gym_root

MAX_ERRORS_PER_INPUT = 20
_ROW_TYPES = {
    "nemo_gym_rows": "nemo_gym_jsonl",
    "preference_rows": "preference_jsonl",
    "verifiable_prompt_rows": "verifiable_prompt_jsonl",
}


def _split_of(config_key: str) -> str:
    """`data.validation.data_path` -> validation (the data config block whose keys apply)."""
    parts = config_key.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "data" else "train"


@rule("artifact_contracts", runners=("nemo_rl", "megatron_to_hf", "rl_prep", "dcp_to_hf"))
def artifact_contracts(ctx: PreflightContext) -> Iterator[Finding]:
    """Validate each bound input path by its type's contract (rows with the config's keys)."""
    graph = load_catalog_types()
    for art in ctx.inputs:
        # A missing path is inputs_exist's finding (E-INPUT-MISSING); not reported twice.
        if not art.is_path or art.type not in graph or not os.path.lexists(art.value):
            continue
        type_name = art.type
        contract = graph.types[type_name].contract
        if contract not in ROW_CONTRACTS and contract not in CHECKPOINT_CONTRACTS:
            continue  # no validator (e.g. data_blend: rl_prep reads and checks its blend itself)
        options: dict = {}
        if contract == "jsonl":
            contract = row_contract_for(contract, ctx.config)
            type_name = _ROW_TYPES.get(contract, type_name)
        if contract in _ROW_TYPES:
            options = contract_options(
                contract, ctx.config, split=_split_of(art.config_key), gym_root=gym_root(ctx)
            )
        report = validate_artifact(
            type_name,
            art.value,
            options=options,
            max_errors=MAX_ERRORS_PER_INPUT,
            allow_hub_id=True,
            graph=graph,
            expected_rows=art.expected_rows,
        )
        yield from report.findings
        shown = sum(1 for f in report.findings if f.is_error)
        if report.errors > shown:
            codes = ", ".join(f"{c}: {n}" for c, n in report.bad_by_code.items())
            rows = f"; {report.bad_rows} of {report.rows} rows bad" if report.rows else ""
            last_error = [f.code for f in report.findings if f.is_error][-1:] or ["E-JSONL"]
            yield Finding(
                last_error[0],
                f"input {art.name} ({art.config_key}): {report.errors} errors in total, "
                f"first {shown} shown{rows}{f' ({codes})' if codes else ''}",
                art.value,
                fix=f"run `python -m steps validate {type_name} {art.value}` for the full list",
                key=art.config_key,
            )
