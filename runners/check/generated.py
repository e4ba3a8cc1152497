"""The files rendered from the preflight rules: PREFLIGHT.md and catalog/kind_codes.json.
`docs` writes them; `check` fails when one is missing or differs (E-DOCS-STALE).
"""

from __future__ import annotations

import json
from pathlib import Path

from catalog.errors import Finding


def kind_codes(runner: str) -> dict[str, str | None]:
    """Each code a run of this kind can meet: code -> the rule raising it (None: no rule
    raises it, the kind `has` what it `needs`)."""
    from catalog.codes import registry
    from runners.kinds import kind_for, known
    from runners.preflight import load_rules

    if runner not in known():
        return {}
    has = kind_for(runner).has
    rules = {r for r, spec in load_rules().items() if spec.applies_to(has)}
    return {
        e.code: e.check
        for e in sorted(registry().entries.values(), key=lambda e: e.code)
        if e.check in rules or (e.needs is not None and set(e.needs) <= has)
    }


def generated(repo: Path) -> dict[Path, str]:
    """Every file rendered from the rules: PREFLIGHT.md and the kinds' codes."""
    from catalog.step_codes import KIND_CODES
    from runners.kinds import known
    from runners.preflight.rule_docs import preflight_doc

    path, text = preflight_doc(repo)
    codes = json.dumps({k: kind_codes(k) for k in sorted(known())}, indent=1) + "\n"
    return {path: text, KIND_CODES: codes}


def stale_generated(repo: Path, fix: str) -> list[Finding]:
    """E-DOCS-STALE for each rendered file that is missing or differs from what `docs` writes."""
    from catalog.docs import stale

    return stale(generated(repo), fix)
