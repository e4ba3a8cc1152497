"""One cause, one finding: NeMo-RL's own verdict on a key (`upstream_judge`) and our derived rule's
on the same key are one problem, reported once, as upstream said it, with our fix (which says what
to write). Apart from the rule module so the preflight driver imports it without a cycle."""

from __future__ import annotations

from dataclasses import replace

from catalog.errors import Finding

CONFIG, TOKENIZER = "E-UPSTREAM-CONFIG", "E-UPSTREAM-TOKENIZER"


def _under(key: str, top: str) -> bool:
    return key == top or key.startswith((f"{top}.", f"{top}["))


def fold_upstream(findings: list[Finding]) -> list[Finding]:
    """One cause, one finding: our error at or under a key upstream refused is dropped, and
    upstream's finding takes the first such fix (ours say what to write)."""
    upstream = [f for f in findings if f.code in (CONFIG, TOKENIZER) and f.key]
    if not upstream:
        return findings
    fixes: dict[int, str] = {}
    kept: list[Finding] = []
    for f in findings:
        match = None
        if f.code not in (CONFIG, TOKENIZER) and f.is_error and f.key:
            match = next((u for u in upstream if _under(f.key, u.key or "")), None)
        if match is None:
            kept.append(f)
        elif f.fix:
            fixes.setdefault(id(match), f.fix)
    return [replace(f, fix=fixes[id(f)]) if id(f) in fixes else f for f in kept]
