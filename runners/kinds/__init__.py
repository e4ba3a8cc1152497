"""Runner kinds: what a step's `run.runner` (step.toml) means, one module per kind.

A kind answers how its config compiles, the command it runs here and in a cluster job, the
resources that job needs; a new kind is a new module here (exporting `KIND`) plus its step folder.

Owns: `base` (what a kind answers) and one module per kind (`nemo_rl`, `dcp_to_hf`,
`megatron_to_hf`, `rl_prep`).
May import: `runners.launch`, `runners.rl_prep`, `runners.nemo_rl`,
`runners.config`, `runners.convert`, catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from catalog import registered
from catalog.errors import StepsError

if TYPE_CHECKING:
    from runners.kinds.base import RunnerKind


def kind_for(name: str) -> RunnerKind:
    """The kind named `name` (its module is imported on first use only)."""
    kind = registered.find(__name__, name, "KIND")
    if kind is None:
        raise StepsError(
            "E-RUNNER-KIND",
            f"no runner kind '{name}' (step.toml run.runner)",
            fix=f"use one of: {', '.join(known())}",
            exit_code=2,
        )
    return kind


def known() -> list[str]:
    """The kinds' names: the modules of this package."""
    return registered.known(__path__)
