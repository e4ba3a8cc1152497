"""How a rule's NeMo-RL versions are read: `@rule(..., versions=RANGE)` (PREFLIGHT.md's
"versions" column is rendered from it).

A rule that mirrors an upstream assert applies where that assert exists; checked against the
source of v0.6.0, v0.7.0 and the pin, and for 0.4.0/0.5.0 as far as upstream's own configs of
those releases reach (tests/upstream_corpus.py). Ranges: `all`, `0.7.0+`, `pin` (the pin
and newer), `<0.6.0` (the rule mirrors a bug fixed upstream in 0.6.0). A rule
whose sub-checks differ by version states its oldest part in its decorator and the rest in
PREFLIGHT.md (and a SINCE table in its module);
those sub-checks read keys that only exist where the check does. An unknown version (no
checkout, no profile) runs every rule.
"""

from __future__ import annotations

from typing import TypeVar

from catalog.nemo_rl_version import NemoRLVersion, in_range

T = TypeVar("T")


def applies(versions: str, version: NemoRLVersion | None) -> bool:
    """Whether a rule declared for `versions` (`@rule(..., versions=...)`) runs for this
    NeMo-RL; an unknown version runs every rule."""
    return in_range(version, versions)


def cite(version: NemoRLVersion | None, places: dict[str, T]) -> T:
    """The upstream `file:line` of the version that runs. `places` maps the oldest version a
    location holds from ("0.6.0", "0.7.0", "pin") to it; an unknown version gets the newest,
    one older than every entry the oldest (0.4/0.5 against a table that starts at 0.6.0)."""
    chosen = places[list(places)[-1]]
    if version is None:
        return chosen
    chosen = places[next(iter(places))]
    for since, place in places.items():
        if in_range(version, since if since == "pin" else f"{since}+"):
            chosen = place
    return chosen
