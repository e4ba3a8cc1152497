"""Rules, kinds and backends agree on what each has: no rule left undecided for any of them.

A rule says what it `needs` of a kind and a kind what it `has` (runners.kinds.base.CAPABILITIES);
a remote rule says what its backend must have (`on`), and a backend decides every way executors
differ (runners.launch.backends.base.DECISIONS). A capability outside the vocabulary would make
a rule never run, or run where it should not.
"""

from __future__ import annotations

from catalog.did_you_mean import did_you_mean
from catalog.errors import Finding


def capabilities() -> list[Finding]:
    """Every kind declares `has`; it and every rule's and code's `needs` are in the vocabulary."""
    from runners.kinds import kind_for, known
    from runners.kinds.base import CAPABILITIES, RunnerKind
    from runners.preflight import load_rules

    out: list[Finding] = []
    for name in known():
        kind = kind_for(name)
        own = [c for c in type(kind).__mro__ if c is not RunnerKind and "has" in vars(c)]
        declared = vars(own[0])["has"] if own else None
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
    from catalog.codes import registry

    reg = registry()
    for entry in reg.entries.values():
        for cap in sorted(set(entry.needs or ()) - set(CAPABILITIES)):
            out.append(_unknown(cap, f"code {entry.code} needs", str(reg.path), CAPABILITIES))
    return out + backend_capabilities()


def backend_capabilities() -> list[Finding]:
    """Every backend decides each of DECISIONS itself; every remote rule says its `on`; both
    within the vocabulary."""
    from runners.launch.backends import find, known
    from runners.launch.backends.base import BACKEND_CAPABILITIES, DECISIONS, BackendTraits
    from runners.preflight import load_rules

    out: list[Finding] = []
    for name in known():
        backend = find(name)
        where = f"runners/launch/backends/{name}.py"
        if backend is None:
            out.append(_backend(f"backend module {name!r} exports no BACKEND", where, "BACKEND"))
            continue
        own = {k for c in backend.__mro__ if c not in (BackendTraits, object) for k in vars(c)}
        for decision in [d for d in DECISIONS if d not in own]:
            out.append(_backend(f"backend {name!r} does not decide `{decision}`", where, decision))
        has = set(vars(backend).get("has", ()) if "has" in own else ())
        for cap in sorted(has - set(BACKEND_CAPABILITIES)):
            out.append(_unknown(cap, f"backend {name!r} has", where, BACKEND_CAPABILITIES))
    for spec in load_rules().values():
        module = spec.func.__module__
        path = module.replace(".", "/") + ".py"
        if spec.on is None and module.startswith("runners.preflight.remote"):
            out.append(
                _backend(
                    f"remote preflight rule `{spec.id}` does not say what its backend needs",
                    path,
                    "on",
                    rule=True,
                )
            )
        for cap in sorted((spec.on or frozenset()) - set(BACKEND_CAPABILITIES)):
            out.append(
                _unknown(cap, f"preflight rule `{spec.id}` is on", path, BACKEND_CAPABILITIES)
            )
    return out


def _backend(message: str, where: str, decision: str, rule: bool = False) -> Finding:
    from runners.launch.backends.base import BACKEND_CAPABILITIES, DECISIONS

    if rule:
        fix = (
            "register it with `@rule(..., on=(...))`: the capabilities of runners.launch."
            f"backends.base.BACKEND_CAPABILITIES it needs ({', '.join(BACKEND_CAPABILITIES)}), "
            "or on=() for every backend"
        )
    elif decision == "BACKEND":
        fix = "export `BACKEND = <its BackendTraits subclass>` (runners/launch/backends/base.py)"
    else:
        fix = f"set `{decision}` on its class: {DECISIONS[decision]}"
    return Finding("E-BACKEND-CAPABILITIES", f"{message}, so the remote preflight rules and the "
                   "launch cannot be decided for it", where, fix=fix)  # fmt: skip


def _unknown(cap: str, who: str, where: str, vocabulary: dict[str, str]) -> Finding:
    from runners.kinds.base import CAPABILITIES

    kinds = vocabulary is CAPABILITIES
    table = "runners.kinds.base.CAPABILITIES" if kinds else "runners.launch.backends.base."
    return Finding(
        "E-KIND-CAPABILITIES" if kinds else "E-BACKEND-CAPABILITIES",
        f"{who} {cap!r}, which {table}{'' if kinds else 'BACKEND_CAPABILITIES'} does not define",
        where,
        fix=did_you_mean(cap, vocabulary, otherwise=f"one of: {', '.join(vocabulary)}"),
    )
