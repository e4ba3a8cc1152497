"""Settings NeMo-RL's setup accepts that fail, or train nothing, once the loop starts (silent on
the CPU oracle, ../shared/oracle).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import partial
from itertools import islice
from pathlib import Path

from catalog.config_values import as_int
from catalog.contracts.builder_rows import UNCHECKED, read_builder_rows
from catalog.contracts.builder_scan import builder_files
from catalog.errors import Finding
from runners.preflight import BoundArtifact, PreflightContext, rule
from runners.preflight.topology import algorithm, cite, enabled, finding

SAVE_PERIOD_MOD = {  # `(total_steps + 1) % save_period` on every step but the last
    "0.6.0": "algorithms/dpo.py:644, grpo.py:1952",
    "0.7.0": "algorithms/dpo.py:648, grpo.py:2875",
    "pin": "algorithms/dpo.py:656, grpo.py:3511",
}
PAD_MOD = {  # `max_len % make_sequence_length_divisible_by` on every batch
    "0.6.0": "data/llm_message_utils.py:334",
    "0.7.0": "data/llm_message_utils.py:335",
    "pin": "data/llm_message_utils.py:355",
}
GRPO_LOADER = {
    "0.6.0": "algorithms/grpo.py:312",
    "0.7.0": "algorithms/grpo.py:363",
    "pin": "algorithms/grpo.py:598",
}
DPO_LOADER = {  # StatefulDataLoader(batch_size=policy.train_global_batch_size, drop_last=True)
    "0.4.0": "algorithms/dpo.py:178",
    "0.6.0": "algorithms/dpo.py:189",
    "0.7.0": "algorithms/dpo.py:207",
    "pin": "algorithms/dpo.py:213",
}
_TRAIN_KEY = re.compile(r"^data\.train(\.\d+)?\.data_path$")


def _is_zero(value: object) -> bool:
    return not isinstance(value, bool) and as_int(value) == 0


@rule("zero_divisors")
def zero_divisors(ctx: PreflightContext) -> Iterator[Finding]:
    """E-ZERO-DIVISOR: checkpointing.save_period or make_sequence_length_divisible_by is 0."""
    err = partial(finding, ctx, "E-ZERO-DIVISOR")
    algo = algorithm(ctx)
    steps = ctx.get(f"{algo}.max_num_steps") if algo else None
    if _is_zero(ctx.get("checkpointing.save_period")) and as_int(steps) != 1:
        yield err(
            "checkpointing.save_period",
            "0: NeMo-RL takes the step number modulo save_period after every training step but "
            "the last (checkpointing enabled or not), so the first step ends in "
            f"ZeroDivisionError ({cite(ctx.nemo_rl_version, SAVE_PERIOD_MOD)})",
            "set checkpointing.save_period to the steps between saves (>= 1); to save only at "
            "the end, set it to the run's max_num_steps",
        )
    key = "policy.make_sequence_length_divisible_by"
    if _is_zero(ctx.get(key)):
        yield err(
            key,
            "0: every batch's length is padded to a multiple of it, so the first batch ends in "
            f"ZeroDivisionError ({cite(ctx.nemo_rl_version, PAD_MOD)})",
            f"set {key}=1 (no padding), or the multiple your parallelism needs",
        )


def _rows_up_to(art: BoundArtifact, limit: int) -> int | None:
    """Rows of a bound data file as NeMo-RL's loader reads it, counted up to `limit` (None: not
    readable here)."""
    if art.expected_rows is not None:
        return art.expected_rows
    if not art.is_path or not os.path.isfile(art.value):
        return None
    built = builder_files(Path(art.value))  # CSV, a JSON array, Parquet...: the loader's rows
    if built:
        read = read_builder_rows(built[0][0], built[0][1], limit=limit)
        unread = any(f.code == UNCHECKED or f.is_error for f in read.findings)
        return None if unread else len(read.rows)
    try:
        with open(art.value, "rb") as fh:
            return sum(1 for _ in islice((line for line in fh if line.strip()), limit))
    except OSError:
        return None


# DPO dataset classes whose pairs are the train file's rows, one for one (others download their
# data, as HelpSteer3, or are the user's own class: their row count is not the file's).
ROW_PAIR_CLASSES = (None, "BinaryPreferenceDataset", "PreferenceDataset")


def _pairs_read_as_rows(ctx: PreflightContext) -> bool:
    name = ctx.get("data.train.dataset_name") or ctx.get("data.default.dataset_name")
    return name in ROW_PAIR_CLASSES


@rule("grpo_train_rows")
def grpo_train_rows(ctx: PreflightContext) -> Iterator[Finding]:
    """E-ZERO-STEPS: fewer train rows than one step's batch (GRPO: its prompts; DPO: the
    global batch of pairs): the loader drops the incomplete batch, the run trains nothing."""
    algo = algorithm(ctx)
    if algo == "dpo":
        if not _pairs_read_as_rows(ctx):
            return
        batch = as_int(ctx.get("policy.train_global_batch_size"))
        key, loader, what = "policy.train_global_batch_size", DPO_LOADER, "pairs"
    elif algo == "grpo" and not ctx.get("data.use_multiple_dataloader"):
        batch = as_int(ctx.get("grpo.num_prompts_per_step"))
        multiplier = ctx.get("grpo.batch_multiplier") if ctx.get("grpo.use_dynamic_sampling") else 1
        if (
            enabled(ctx.get("grpo.async_grpo"))
            or not batch
            or not isinstance(multiplier, int | float)
        ):
            return
        batch = int(batch * multiplier)
        key, loader, what = "grpo.num_prompts_per_step", GRPO_LOADER, "prompts"
    else:
        return
    train = [a for a in ctx.inputs if _TRAIN_KEY.match(a.config_key)]
    if not batch or batch < 1 or not train:
        return
    counts = [_rows_up_to(a, batch) for a in train]
    if any(c is None for c in counts):
        return
    rows = sum(c for c in counts if c is not None)
    if rows < batch:
        yield finding(
            ctx,
            "E-ZERO-STEPS",
            key,
            f"the train data has {rows} rows but each step draws {batch} {what}; the "
            "dataloader drops the incomplete batch (drop_last=True, "
            f"{cite(ctx.nemo_rl_version, loader)}), so the run would train 0 steps",
            f"set {key} to {rows} or fewer (keeping it a multiple of the data-parallel size), "
            "or give more rows",
        )
