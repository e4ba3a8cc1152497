"""One cause, one finding: folds applied to preflight's findings, apart from the rule modules so
the preflight driver imports them without a cycle (`ctx` is a PreflightContext, not imported).

`fold_upstream`: NeMo-RL's own verdict on a key (`upstream_judge`) and our rule's on the same key
are one problem, reported as upstream said it, with our fix (which says what to write).
`fold_layout`: a config in the 0.6.0+ `data.train` / `validation` / `default` layout, which our
configs use, run by 0.4.0/0.5.0 would get twenty-odd schema findings with one cause (issue 40
item 16); a second set of configs was not chosen: 0.4/0.5 also lack settings the steps rely on.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Any

from catalog.errors import Finding
from catalog.nemo_rl_version import in_range
from catalog.upstream import NEMO_RL_STEPS_OLDEST

CONFIG, TOKENIZER = "E-UPSTREAM-CONFIG", "E-UPSTREAM-TOKENIZER"
DATA, LOSS, RESUME = "E-UPSTREAM-DATA", "E-UPSTREAM-LOSS", "E-UPSTREAM-RESUME"
LOGGER, ENV = "E-UPSTREAM-LOGGER", "E-UPSTREAM-ENV"
UPSTREAM = (CONFIG, TOKENIZER, DATA, LOSS, RESUME, LOGGER, ENV)
READS = "its check also reads"  # a setup verdict's message names the other keys its check read
HUB = "W-UPSTREAM-HUB"
ROWS_OF = "the first rows of "  # ... and the data file whose first rows upstream could not take
LAYOUT_KEYS = ("train", "validation", "default")  # data: keys that exist from 0.6.0
FOLDED = ("E-SCHEMA-", "W-SCHEMA-", "E-SETUP-KEY")  # what the schema of the version says
LAYOUT_CODE = "E-NEMO-RL-LAYOUT"


def _under(key: str, top: str) -> bool:
    """`key` is `top` or under it; a bare section (`data`, where a setup verdict could not be
    placed closer) holds only itself, so our precise findings in it stay."""
    if "." not in top and "[" not in top:
        return key == top
    return key == top or key.startswith((f"{top}.", f"{top}["))


def _read(f: Finding) -> list[str]:
    """The keys an upstream finding is about: its own, and those its failing check read."""
    keys = [f.key or ""]
    if READS in f.message:
        keys += re.split(r",\s*", f.message.rsplit(READS, 1)[1].strip())
    return [k for k in keys if k]


def _rows_file(f: Finding) -> str | None:
    match = re.search(re.escape(ROWS_OF) + r"(\S+?):? ", f.message) if f.code == DATA else None
    return os.path.realpath(match.group(1)) if match else None


def _rows_told(findings: list[Finding]) -> list[Finding]:
    """Upstream's verdict on a data file's first rows is dropped where our row checks already
    refused that file: ours name the line and the column."""
    ours = {os.path.realpath(f.path) for f in findings
            if f.code not in UPSTREAM and f.is_error and f.path}  # fmt: skip
    return [f for f in findings if _rows_file(f) not in ours or _rows_file(f) is None]


def fold_upstream(findings: list[Finding]) -> list[Finding]:
    """Our error at or under a key upstream refused is dropped, upstream's finding taking its
    fix; upstream's verdict on rows ours refused already is dropped."""
    findings = _rows_told(findings)
    refused = {f.key for f in findings if f.is_error and f.key}
    findings = [f for f in findings if not (f.code == HUB and f.key in refused)]  # said there
    upstream = [(f, _read(f)) for f in findings if f.code in UPSTREAM and f.key]
    if not upstream:
        return findings
    fixes: dict[int, str] = {}
    kept: list[Finding] = []
    for f in findings:
        match = None
        if f.code not in UPSTREAM and f.is_error and f.key:
            key = f.key
            match = next((u for u, keys in upstream if any(_under(key, k) for k in keys)), None)
        if match is None:
            kept.append(f)
        elif f.fix:
            fixes.setdefault(id(match), f.fix)
    return [replace(f, fix=fixes[id(f)]) if id(f) in fixes else f for f in kept]


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
        LAYOUT_CODE,
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
