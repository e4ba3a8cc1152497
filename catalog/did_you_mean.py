"""Suggestions for a mistyped name (a step id, a type, a config key, a port, a stage): one
matcher (difflib's ratio, one cutoff) and one phrasing for every "did you mean"."""

from __future__ import annotations

import difflib
import functools
from collections import Counter
from collections.abc import Iterable

CUTOFF = 0.6  # difflib's default: close enough that the suggestion is usually the intent
MAX_COMPARED = 2_000  # options scored per word: a config of 1e5 keys asked once per key was n^2


def close_matches(word: str, options: Iterable[str], n: int = 3) -> list[str]:
    """The options nearest to `word`, best first (none when nothing is close).

    Bounded: at most MAX_COMPARED options whose length allows CUTOFF, nearest in length first,
    and only those passing difflib's two cheap bounds (length, shared letters) get a matcher:
    the same answer, without a matcher per key for a config of 1e5 unknown keys."""
    pool = list(options)
    size = len(word)
    if len(pool) > MAX_COMPARED:
        pool = [o for o in pool if 2 * min(len(o), size) >= CUTOFF * (len(o) + size)]
        if len(pool) > MAX_COMPARED:
            pool = sorted(pool, key=lambda o: abs(len(o) - size))[:MAX_COMPARED]
    pool = [
        p[0]
        for p in _profiles(tuple(pool))
        if _ratio(min(p[1], size), p[1] + size) >= CUTOFF
        and _ratio(_shared(word, p), p[1] + size) >= CUTOFF
    ]
    return difflib.get_close_matches(word, pool, n=n, cutoff=CUTOFF) if pool else []


Profile = tuple[str, int, tuple[str, ...], tuple[int, ...]]  # option, length, letters, counts


@functools.lru_cache(maxsize=256)
def _profiles(options: tuple[str, ...]) -> tuple[Profile, ...]:
    """Each option with its length and letter counts (a command asks against one list often)."""
    return tuple((o, len(o), tuple(c := Counter(o)), tuple(c.values())) for o in options)


def _shared(word: str, profile: Profile) -> int:
    """Letters a word and an option have in common, with multiplicity (difflib's quick_ratio)."""
    return sum(map(min, profile[3], map(word.count, profile[2])))


def _ratio(matches: int, length: int) -> float:
    """difflib's ratio formula, so a bound compares with CUTOFF exactly as difflib does."""
    return 2.0 * matches / length if length else 1.0


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


def edits(a: str, b: str, limit: int | None = None) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`; with
    `limit`, any count above it may come back as `limit + 1` (found without the whole table:
    a length apart by more, or two rows in a row whose least count is above it)."""
    if limit is not None and abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    over = False  # the previous row's least count was above the limit
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        if limit is not None:  # a row's least count is at least that of one of the two before
            if min(row) > limit and over:
                return limit + 1
            over = min(row) > limit
        prev2, prev = prev, row
    return prev[-1]


def typo_of(word: str, options: Iterable[str], most: int = 2) -> str | None:
    """The one option `word` is a typo of: within `most` edits (one for words of up to four
    letters), nearest first; None when none is that near or two are equally near. Options too
    far in length or shared letters (an edit changes those by one) are skipped before `edits`."""
    size = len(word)
    limit = 1 if size <= 4 else most
    near = []
    for p in _profiles(tuple(dict.fromkeys(options))):
        o, length = p[0], p[1]
        if o == word or abs(length - size) > limit:
            continue
        if max(length, size) - _shared(word, p) > limit:
            continue
        d = edits(word, o, limit)
        if d <= limit:
            near.append((d, o))
    near.sort()
    if not near or (len(near) > 1 and near[0][0] == near[1][0]):
        return None
    return near[0][1]
