"""Rules and kinds agree on what a kind has: no rule left undecided for any kind.

A preflight rule says what it `needs` of a step's kind and a kind says what it `has`
(runners.kinds.base.CAPABILITIES), so a new kind gets every rule that needs nothing (inputs,
artifact contracts, remote mounts, secrets) without being named anywhere. This gate fails when a
kind does not say what it has, or a rule or kind names a capability the vocabulary lacks (that
rule would never run, or run where it should not).
"""

from __future__ import annotations

from catalog.did_you_mean import did_you_mean
from catalog.errors import Finding


def capabilities() -> list[Finding]:
    """Every kind declares `has` within the vocabulary; every rule's `needs` is within it."""
    from runners.kinds import kind_for, known
    from runners.kinds.base import CAPABILITIES, RunnerKind
    from runners.preflight import load_rules

    out: list[Finding] = []
    for name in known():
        kind = kind_for(name)
        declared = next(
            (
                c.__dict__["has"]
                for c in type(kind).__mro__
                if c is not RunnerKind and "has" in c.__dict__
            ),
            None,
        )
        where = f"runners/kinds/{name}.py"
        if declared is None:
            out.append(
                Finding(
                    "E-KIND-CAPABILITIES",
                    f"runner kind {name!r} does not say what it has, so no preflight rule can "
                    "be decided for it",
                    where,
                    fix="set `has = frozenset({...})` on its class: the capabilities of "
                    f"runners.kinds.base.CAPABILITIES it has ({', '.join(CAPABILITIES)}), or "
                    "frozenset() for none",
                )
            )
            continue
        for cap in sorted(set(declared) - set(CAPABILITIES)):
            out.append(_unknown(cap, f"runner kind {name!r} has", where, CAPABILITIES))
    for spec in load_rules().values():
        for cap in sorted(spec.needs - set(CAPABILITIES)):
            module = spec.func.__module__.replace(".", "/") + ".py"
            out.append(_unknown(cap, f"preflight rule `{spec.id}` needs", module, CAPABILITIES))
    return out


def _unknown(cap: str, who: str, where: str, vocabulary: dict[str, str]) -> Finding:
    return Finding(
        "E-KIND-CAPABILITIES",
        f"{who} {cap!r}, which runners.kinds.base.CAPABILITIES does not define",
        where,
        fix=did_you_mean(cap, vocabulary, otherwise=f"one of: {', '.join(vocabulary)}"),
    )
