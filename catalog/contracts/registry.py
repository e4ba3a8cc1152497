"""The registry of artifact contracts: each row contract's builder and options, the checkpoint
contracts, and `get_row_contract` that binds a row contract to its options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catalog.contracts.rows import RowCheck, RowViolation
from catalog.did_you_mean import did_you_mean
from catalog.errors import StepsError


def _any_object(**_: Any) -> RowCheck:
    """`training_jsonl`: JSONL syntax only (the reader already requires each row be an object)."""

    def check(row: Any) -> list[RowViolation]:
        return []

    return check


def _factory(module: str, name: str) -> Callable[..., Any]:
    def build(**options: Any) -> Any:
        from importlib import import_module

        return getattr(import_module(module), name)(**options)

    return build


# contract name -> (builder, the options it takes)
ROW_CONTRACTS: dict[str, tuple[Callable[..., RowCheck], tuple[str, ...]]] = {
    "jsonl": (_any_object, ()),
    "nemo_gym_rows": (
        _factory("catalog.contracts.gym_rows", "nemo_gym_rows"),
        ("default_agent_ref", "agent_names", "allow_empty_input", "gym_version", "routes"),
    ),
    "preference_rows": (
        _factory("catalog.contracts.nemo_rl_rows", "preference_rows"),
        ("prompt_key", "chosen_key", "rejected_key"),
    ),
    "verifiable_prompt_rows": (
        _factory("catalog.contracts.nemo_rl_rows", "verifiable_prompt_rows"),
        ("input_key", "output_key", "text_answer"),
    ),
}
# contract name -> builder of its fast pre-filter `accept(line: bytes) -> bool` (same options):
# a line it accepts is a row the contract passes, so the row need not be parsed into dicts.
ROW_ACCEPTS: dict[str, Callable[..., Any]] = {
    "nemo_gym_rows": _factory("catalog.contracts.gym_fast", "gym_accept"),
}
CHECKPOINT_CONTRACTS = (
    "hf_checkpoint",
    "megatron_checkpoint",
    "nemo_rl_checkpoint",  # either backend; the note names it
    "nemo_rl_megatron_checkpoint",
    "nemo_rl_dcp_checkpoint",
)
# Row contracts whose readers fail on a blank line, so it is an error (E-JSONL-BLANK) at its
# line: NeMo-Gym's rollout collection and ng_prepare_data, and NeMo-RL's NemoGymDataset (it
# json.loads every raw line). Preference and prompt rows go through `datasets`' JSON loader
# (pyarrow), which skips blank lines, so there a blank line stays a warning.
BLANK_LINE_ERRORS = frozenset({"nemo_gym_rows"})


@dataclass(frozen=True)
class RowContract:
    """A row check bound to its options; call it (or `.check`) on one parsed row.

    `accept`, when set, takes the raw line and returns True only for rows `check` passes; a
    False means "parse the row and ask `check`", never "the row is bad". `blank_is_error`:
    the rows' reader fails on a blank line (see BLANK_LINE_ERRORS).
    """

    check: RowCheck
    accept: Callable[[bytes], bool] | None = None
    blank_is_error: bool = False

    def __call__(self, row: Any) -> list[RowViolation]:
        return self.check(row)


def get_row_contract(name: str, **options: Any) -> RowContract:
    """The row contract `name` (a types.toml `contract`) bound to options (None = unset)."""
    if name not in ROW_CONTRACTS:
        fix = did_you_mean(name, ROW_CONTRACTS, otherwise=f"one of {sorted(ROW_CONTRACTS)}")
        raise StepsError(
            "E-CONTRACT-UNKNOWN", f"no row contract named {name!r}", fix=fix, exit_code=2
        )
    build, allowed = ROW_CONTRACTS[name]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        said = f"row contract {name!r} takes no option {', '.join(unknown)}"
        fix = f"options of {name}: {', '.join(allowed) or 'none'}"
        raise StepsError("E-CONTRACT-OPTION", said, fix=fix, exit_code=2)
    given = {k: v for k, v in options.items() if v is not None}
    accept = ROW_ACCEPTS[name](**given) if name in ROW_ACCEPTS else None
    return RowContract(build(**given), accept, name in BLANK_LINE_ERRORS)
