"""An input bound to `data.<split>.data_path` is read only if the dataset class there reads it.

A hub dataset such as HelpSteer3 ignores `data_path`: refused (E-INPUT-IGNORED) with the override
that makes the class read the input, rather than rewriting a possibly deliberate name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from catalog.errors import Finding
from catalog.nemo_rl_registries import PREFERENCE_DATASETS, RESPONSE_DATASETS
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import UNRESOLVED, algorithm, cite, dataset_entries, finding

# Registry names whose class reads `data_path` (0.6.0, 0.7.0, the pin).
READS_DATA_PATH = {
    "dpo": ("BinaryPreferenceDataset", "PreferenceDataset"),
    "grpo": ("ResponseDataset", "NemoGymDataset", "openai_format", "general-conversation-jsonl"),
}
BOUND = re.compile(r"^(data\.(?:train|validation)(?:\[\d+\])?)\.data_path$")


@rule("bound_input_read", versions="0.6.0+")
def bound_input_read(ctx: PreflightContext) -> Iterator[Finding]:
    """E-INPUT-IGNORED: a bound input's dataset entry names a class that never reads data_path."""
    algo = algorithm(ctx)
    if algo not in READS_DATA_PATH:
        return
    registry = cite(
        ctx.nemo_rl_version, PREFERENCE_DATASETS if algo == "dpo" else RESPONSE_DATASETS
    )
    bound = {m.group(1): a for a in ctx.inputs if (m := BOUND.match(a.config_key))}
    for key, entry, written in dataset_entries(ctx):
        art = bound.get(key)
        name = entry.get("dataset_name")
        if art is None or not isinstance(name, str) or name == UNRESOLVED:
            continue
        if name in READS_DATA_PATH[algo] or name not in registry:
            continue  # a reader, or a dotted user class / unknown name (dataset_names says)
        at = f"{key}.dataset_name" if "dataset_name" in written else "data.default.dataset_name"
        readers = " or ".join(READS_DATA_PATH[algo][:2])
        yield finding(
            ctx,
            "E-INPUT-IGNORED",
            at,
            f"is {name!r}, a built-in dataset NeMo-RL loads by itself: it ignores {key}.data_path,"
            f" where input {art.name!r} is bound ({art.written or art.value}), so the run would "
            f"train on {name}, not on it",
            f"add {key}.dataset_name={READS_DATA_PATH[algo][0]} (the class that reads a local "
            f"file of this input's rows; {readers} per the rows' shape), or drop the input to "
            f"train on {name}",
        )
