"""Suggestions for a mistyped name: one matcher and one phrasing for every "did you mean".

Every command that rejects a name (a step id, a type, a config key, a port, a stage) asks here,
so a typo gets the same help everywhere: difflib's similarity ratio with one cutoff.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6  # difflib's default: close enough that the suggestion is usually the intent


def close_matches(word: str, options: Iterable[str], n: int = 3) -> list[str]:
    """The options nearest to `word`, best first (none when nothing is close)."""
    return difflib.get_close_matches(word, list(options), n=n, cutoff=CUTOFF)


def close_keys(key: str, keys: Iterable[str], n: int = 3) -> list[str]:
    """Nearest dotted config keys: whole-key matches first, then keys with the same leaf
    (`policy.lr` for a mistyped `polcy.lr`)."""
    keys = list(keys)
    close = close_matches(key, keys, n)
    leaf = key.rsplit(".", 1)[-1]
    for k in keys:
        if len(close) >= n:
            break
        if k.rsplit(".", 1)[-1] == leaf and k not in close:
            close.append(k)
    return close


def did_you_mean(word: str, options: Iterable[str], n: int = 1, *, otherwise: str = "") -> str:
    """`did you mean a or b?` for the closest options, else `otherwise`."""
    return phrase(close_matches(word, options, n), otherwise=otherwise)


def phrase(suggestions: list[str], *, otherwise: str = "") -> str:
    """The one wording of a suggestion list."""
    return f"did you mean {' or '.join(suggestions)}?" if suggestions else otherwise


def with_suggestion(word: str, options: Iterable[str], fix: str) -> str:
    """`fix`, led by `did you mean X?` when an option is close to `word`."""
    hint = did_you_mean(word, options)
    return f"{hint} {fix}" if hint else fix
