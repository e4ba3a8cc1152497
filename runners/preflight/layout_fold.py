"""A config written for a newer NeMo-RL than the one that runs: one finding, not one per key.

0.6.0 moved `data:` to `data.train` / `validation` / `default`, which our configs use; against
0.4.0/0.5.0 they would get twenty-odd findings with one cause (issue 40 item 16). A second set of
configs was not chosen: 0.4/0.5 also lack settings the steps rely on.
"""

from __future__ import annotations

from typing import Any

from catalog.errors import Finding
from catalog.nemo_rl_version import in_range
from catalog.upstream import NEMO_RL_STEPS_OLDEST

# `ctx` is a runners.preflight.PreflightContext: not imported, so the preflight driver imports
# this module without a cycle (as upstream_fold).

LAYOUT_KEYS = ("train", "validation", "default")  # data: keys that exist from 0.6.0
FOLDED = ("E-SCHEMA-", "W-SCHEMA-", "E-SETUP-KEY")  # what the schema of the version says
CODE = "E-NEMO-RL-LAYOUT"


def newer_layout(ctx: Any) -> bool:
    """The config's data section has the 0.6.0+ shape and an older NeMo-RL will run it."""
    version = ctx.nemo_rl_version
    data = ctx.get("data")
    if version is None or in_range(version, f"{NEMO_RL_STEPS_OLDEST}+"):
        return False
    return isinstance(data, dict) and any(k in data for k in LAYOUT_KEYS)


def fold_layout(findings: list[Finding], ctx: Any) -> list[Finding]:
    """The schema's findings on a config of the newer layout, as one error."""
    if not newer_layout(ctx):
        return findings
    folded = [f for f in findings if f.code.startswith(FOLDED)]
    gone = {id(f) for f in folded}
    if any(f.code == "E-GYM-SCRIPT" for f in findings):  # 0.4.0: no script reads it at all
        return [f for f in findings if id(f) not in gone]
    if not folded:
        return findings
    version = ctx.nemo_rl_version.label if ctx.nemo_rl_version else "?"
    first = next(
        (f for f in folded if f.is_error and (f.key or "").startswith("data.")),
        next((f for f in folded if f.is_error), None),
    )
    fails = f" First failure there: {first.message}." if first else ""
    others = len(folded) - (1 if first else 0)
    more = f" {others} more key(s) are unknown to or missing for {version}." if others else ""
    key = next((f"data.{k}" for k in LAYOUT_KEYS if ctx.get(f"data.{k}") is not None), "data")
    path, line = _where(ctx, key)
    gym = ctx.get("env.should_use_nemo_gym") is True
    old = (
        "data.train_jsonl_fpath and data.validation_jsonl_fpath (its NeMo-Gym script)"
        if gym
        else "one dataset: data.dataset_name with train_data_path / val_data_path"
    )
    layout = Finding(
        CODE,
        f"data: this config is written for NeMo-RL {NEMO_RL_STEPS_OLDEST} or newer (data.train / "
        f"validation / default; this catalog's step configs are), but NeMo-RL {version} will run "
        f"it, which reads {old}.{fails}{more}",
        path,
        line,
        f"run NeMo-RL {NEMO_RL_STEPS_OLDEST} or newer (--nemo-rl CHECKOUT, or the profile's "
        f"nemo_rl_version), or write your own config in {version}'s layout from its "
        "examples/configs (not on top of a step's config)",
        key=key,
    )
    return [layout, *(f for f in findings if id(f) not in gone)]


def _where(ctx: Any, key: str) -> tuple[str | None, int | None]:
    """The file and line that set `key` (topology.where, without importing the rules)."""
    try:
        return ctx.compiled.locate(key) if ctx.compiled is not None else (None, None)
    except Exception:  # a location is a courtesy; never lose the finding over it
        return (str(ctx.config_file) if ctx.config_file else None), None
