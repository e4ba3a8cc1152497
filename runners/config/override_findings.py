"""A wrong override is one finding: the key the user typed, first, with the value as typed.

`policy.max_total_sequence_length=abc` also fails at every key interpolating it
(`max_new_tokens: ${policy.max_total_sequence_length}`); those are folded into its finding.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from catalog.config_values import dotted_get
from catalog.errors import Finding

OVERRIDE_PREFIX = "override '"
_REF = re.compile(r"\$\{([^${}:,\s]+)\}")
SHOWN = 3


def _refs(value: Any, key: str) -> set[str]:
    """Keys an interpolation string refers to (relative `${.x}` / `${..x}` made absolute)."""
    if not isinstance(value, str) or "${" not in value:
        return set()
    out: set[str] = set()
    parent = key.split(".")[:-1]
    for ref in _REF.findall(value):
        if ref.startswith("."):
            ups = len(ref) - len(ref.lstrip("."))
            base = parent[: len(parent) - (ups - 1)] if ups > 1 else parent
            ref = ".".join([*base, ref.lstrip(".")])
        out.add(ref)
    return out


def _source(config: Any, key: str, typed: set[str], depth: int = 0) -> str | None:
    """The overridden key `key`'s value comes from through interpolations, if any."""
    if depth > 16:
        return None
    for ref in _refs(dotted_get(config, key), key):
        hit = next((t for t in typed if ref == t or ref.startswith(t + ".")), None)
        if hit is not None:
            return hit
        found = _source(config, ref, typed, depth + 1)
        if found is not None:
            return found
    return None


def fold_override_findings(
    findings: list[Finding], compiled: Any, raw: Callable[[], Any] | None = None
) -> list[Finding]:
    """Findings with those repeating an error at keys interpolating its key folded into it;
    the source (a typed override, else a key written out in YAML) leads, overrides first."""
    if compiled is None or not any(f.key and f.is_error for f in findings):
        return findings
    from omegaconf import OmegaConf

    # `raw`: the same container made once already (`PreflightContext.raw`), read-only here
    config = raw() if raw is not None else OmegaConf.to_container(compiled.config, resolve=False)
    typed = {
        f.key: f
        for f in findings
        if f.key and f.is_error and (f.path or "").startswith(OVERRIDE_PREFIX)
    }
    written = {
        f.key: f
        for f in findings
        if f.key
        and f.is_error
        and f.key not in typed
        and not _refs(dotted_get(config, f.key), f.key)
    }
    own = {**typed, **written}
    if not own:
        return findings
    folded: dict[str, list[str]] = {k: [] for k in own}
    rest: list[Finding] = []
    for f in findings:
        if f.key in own and own[f.key] is f:
            continue  # placed below
        source = _source(config, f.key, set(own)) if f.key and f.is_error else None
        if source is not None and own[source].code == f.code:
            folded[source].append(f.key)  # type: ignore[arg-type]
            continue
        rest.append(f)
    first = [_with_reach(f, folded[k]) for k, f in typed.items()]
    first += [_with_reach(f, folded[k]) for k, f in written.items() if folded[k]]
    kept = [f for k, f in written.items() if not folded[k]]
    return first + [f for f in findings if f in kept or f in rest]


def _with_reach(f: Finding, keys: list[str]) -> Finding:
    """The source's finding, naming the keys that interpolate it (they would fail with it)."""
    if not keys:
        return f
    names = ", ".join(keys[:SHOWN]) + (", ..." if len(keys) > SHOWN else "")
    more = f" (it also reaches {len(keys)} key(s) that interpolate it: {names})"
    return Finding(f.code, f.message + more, f.path, f.line, f.fix, f.severity, f.key)
