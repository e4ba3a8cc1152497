"""Preflight: every bound input artifact that is a local path passes its type's contract."""

from __future__ import annotations

import os
from collections.abc import Iterator

from catalog.contracts import CHECKPOINT_CONTRACTS, ROW_CONTRACTS, validate_artifact
from catalog.contracts.loader_formats import block_of
from catalog.contracts.options import step_contract
from catalog.errors import Finding
from catalog.types import load_catalog_types
from runners.preflight import PreflightContext, rule
from runners.preflight.data_loader import user_class_blocks
from runners.preflight.gym import gym_root

MAX_ERRORS_PER_INPUT = 20


def _split_of(config_key: str) -> str:
    """`data.validation.data_path` -> validation (the data config block whose keys apply)."""
    parts = config_key.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "data" else "train"


@rule("artifact_contracts", needs=())
def artifact_contracts(ctx: PreflightContext) -> Iterator[Finding]:
    """Validate each bound input path by its type's contract (rows with the config's keys)."""
    graph = load_catalog_types()
    user_classes = user_class_blocks(ctx)  # their rows are the class's (data_loader warns)
    for art in ctx.inputs:
        # A missing path is inputs_exist's finding (E-INPUT-MISSING); not reported twice.
        if not art.is_path or art.type not in graph or not os.path.lexists(art.value):
            continue
        if block_of(art.config_key) in user_classes:
            continue
        type_name = art.type
        contract = graph.types[type_name].contract
        if contract not in ROW_CONTRACTS and contract not in CHECKPOINT_CONTRACTS:
            continue  # no validator (e.g. data_blend: rl_prep reads and checks its blend itself)
        options: dict = {}
        if contract in ROW_CONTRACTS:
            type_name, contract, options = step_contract(
                type_name,
                contract,
                ctx.config,
                split=_split_of(art.config_key),
                gym_root=gym_root(ctx),
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
