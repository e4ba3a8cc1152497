"""Dataset and processor names NeMo-RL looks up in its registries at data setup (a dotted name
is a user's class: not judged here).
"""

from __future__ import annotations

from collections.abc import Iterator

from catalog.did_you_mean import close_matches
from catalog.errors import Finding
from catalog.nemo_rl_registries import (
    PREFERENCE_DATASETS,
    PREFERENCE_RAISE,
    PROCESSOR_ASSERT,
    PROCESSORS,
    RESPONSE_DATASETS,
    RESPONSE_RAISE,
    UNPROCESSED_050,
)
from catalog.nemo_rl_version import in_range
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import (
    UNRESOLVED,
    algorithm,
    cite,
    dataset_entries,
    finding,
    uses_gym,
)


def _entries(ctx: PreflightContext) -> Iterator[tuple[str, dict, dict]]:
    """(config key, the entry as NeMo-RL reads it, the entry as written) per dataset."""
    data = ctx.get("data")
    if not isinstance(data, dict):
        return
    new_layout = in_range(ctx.nemo_rl_version, "0.6.0+")
    if "train" in data and new_layout:
        yield from dataset_entries(ctx)
    elif "train" not in data and "dataset_name" in data and not new_layout:
        gym_script = uses_gym(ctx) and in_range(ctx.nemo_rl_version, "0.5.0+")
        if not gym_script:  # 0.5.0's run_grpo_nemo_gym.py reads only the jsonl paths
            yield "data", data, data


def _hint(name: str, known: tuple[str, ...]) -> str:
    close = close_matches(name, known, 1)
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _where(key: str, name: str, written: dict) -> str:
    """The key that set `name`: the entry's own, else data.default's."""
    if name in written or key == "data":
        return f"{key}.{name}"
    return f"data.default.{name}"


@rule("dataset_names")
def dataset_names(ctx: PreflightContext) -> Iterator[Finding]:
    """E-DATASET-NAME / E-DATA-PROCESSOR: names outside NeMo-RL's registries."""
    algo = algorithm(ctx)
    if algo not in ("dpo", "grpo"):
        return
    version = ctx.nemo_rl_version
    label = "this NeMo-RL" if version is None else f"NeMo-RL {version.label}"
    known = cite(version, PREFERENCE_DATASETS if algo == "dpo" else RESPONSE_DATASETS)
    raised = cite(version, PREFERENCE_RAISE if algo == "dpo" else RESPONSE_RAISE)
    kind = "preference" if algo == "dpo" else "response"
    for key, entry, written in _entries(ctx):
        name = entry.get("dataset_name")
        if not isinstance(name, str) or name == UNRESOLVED or "." in name:
            continue
        if name not in known:
            hint = _hint(name, known)
            yield finding(
                ctx,
                "E-DATASET-NAME",
                _where(key, "dataset_name", written),
                f"{name!r} is not a {kind} dataset {label} knows: ValueError at {raised} when "
                "data is set up" + (f"; {hint}" if hint else ""),
                f"use one of: {', '.join(sorted(known, key=str.lower))}",
            )
            continue
        if algo == "grpo":
            yield from _processor(ctx, key, entry, written, label)


def _processor(
    ctx: PreflightContext, key: str, entry: dict, written: dict, label: str
) -> Iterator[Finding]:
    version = ctx.nemo_rl_version
    if not in_range(version, "0.5.0+") or "processor" not in entry:
        return  # 0.4.0 picks processors in the example script; absent means "default"
    if not in_range(version, "0.6.0+") and entry.get("dataset_name") in UNPROCESSED_050:
        return
    name = entry["processor"]
    known = cite(version, PROCESSORS)
    if isinstance(name, str) and (name in known or name == UNRESOLVED):
        return
    hint = _hint(name, known) if isinstance(name, str) else ""
    yield finding(
        ctx,
        "E-DATA-PROCESSOR",
        _where(key, "processor", written),
        f"{name!r} is not in {label}'s PROCESSOR_REGISTRY: assertion at "
        f"{cite(version, PROCESSOR_ASSERT)} when data is set up" + (f"; {hint}" if hint else ""),
        f"use one of: {', '.join(known)}",
    )
