"""One cause, one finding: NeMo-RL's own verdict on a key (`upstream_judge`) and our derived rule's
on the same key are one problem, reported once, as upstream said it, with our fix (which says what
to write). Apart from the rule module so the preflight driver imports it without a cycle."""

from __future__ import annotations

import os
import re
from dataclasses import replace

from catalog.errors import Finding

CONFIG, TOKENIZER = "E-UPSTREAM-CONFIG", "E-UPSTREAM-TOKENIZER"
DATA, LOSS, RESUME = "E-UPSTREAM-DATA", "E-UPSTREAM-LOSS", "E-UPSTREAM-RESUME"
LOGGER, ENV = "E-UPSTREAM-LOGGER", "E-UPSTREAM-ENV"
UPSTREAM = (CONFIG, TOKENIZER, DATA, LOSS, RESUME, LOGGER, ENV)
READS = "its check also reads"  # a setup verdict's message names the other keys its check read
HUB = "W-UPSTREAM-HUB"
ROWS_OF = "the first rows of "  # ... and the data file whose first rows upstream could not take


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
