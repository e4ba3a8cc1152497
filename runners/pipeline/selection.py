"""Which stages a `pipeline run` runs: --from, --to, --only and --force, over the plan's
topological order."""

from __future__ import annotations

from typing import Any

from catalog.did_you_mean import did_you_mean
from catalog.errors import StepsError


def select(plan: Any, opts: Any) -> tuple[set[str], set[str]]:
    """(stages to consider, stages forced to run) from --from, --to, --only and --force;
    a stage in neither set and not needed by one (after --to or --only) is left out."""
    ids = [s.id for s in plan.stages]
    named = [opts.from_stage, opts.to_stage, opts.only_stage]
    for sid in [*opts.force, *(n for n in named if n)]:
        if sid not in ids:
            raise StepsError(
                "E-PIPELINE-STAGE",
                f"no stage '{sid}' in pipeline {plan.name}",
                fix=did_you_mean(sid, ids, otherwise=f"stages: {', '.join(ids)}"),
                exit_code=2,
            )
    forced = set(opts.force)
    consider = set(ids)
    if opts.from_stage:
        down = {opts.from_stage}
        for s in plan.stages:  # plan order is topological
            if set(s.after) & down:
                down.add(s.id)
        consider, forced = down, forced | down
    if opts.to_stage:
        consider &= _needed(plan, opts.to_stage)
    if opts.only_stage:
        consider &= {opts.only_stage}
    return consider, forced


def _needed(plan: Any, last: str) -> set[str]:
    """`last` and every stage it reads from, directly or not."""
    up = {last}
    for s in reversed(plan.stages):  # plan order is topological
        if s.id in up:
            up |= set(s.after)
    return up


def beyond(plan: Any, opts: Any) -> set[str]:
    """Stages after --to / --only's stage: not run, and not needed by it."""
    last = opts.to_stage or opts.only_stage
    return {s.id for s in plan.stages} - _needed(plan, last) if last else set()
