"""A step's config findings reused while nothing they rest on has changed: compiling every config
and resolving each interpolation is most of `check`, and one process (the tests, `check` over
several roots) checks the same step files again and again, often copied to another folder.

What the findings rest on, compared by content: the step.toml, the names and bytes of its
configs, the bytes of every file of each config's `defaults:` chain, the registered resolvers and
the environment variables the files read with `${oc.env:VAR}`: whether each is set, and its value
where it sits inside another interpolation (the whole environment when a file names a variable
in a way not read here). Paths are kept relative to the step folder, so a copy of the step
elsewhere reuses them; a step whose files or findings leave its folder, or whose config does not
load, is not kept (`Unkept`). Kept in the tree's one memo engine, `catalog.content_memo`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from pathlib import Path

from catalog.content_memo import SHARED, ContentMemo, Unkept
from catalog.errors import Finding
from runners.check.step_under_check import StepUnderCheck

# `${oc.env:VAR}` or `${oc.env:VAR,default}` with a plain default: its value is a string that
# nothing else reads unless the interpolation sits inside another one.
_ENV = re.compile(rb"\$\{\s*oc\.env\s*:\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:,[^${}\n]*)?\}")


@dataclasses.dataclass(frozen=True)
class _Findings:
    """A step's config findings and what they rest on beyond the key: the bytes of every file
    of the chains and the environment those files see. Kept ones have `chains` and paths
    relative to the step folder; unkept ones (`chains` None) their paths as found."""

    findings: tuple[Finding, ...]
    chains: tuple | None = None
    env: tuple = ()

    def still_true(self, home: Path) -> bool:
        """Whether the files and environment under `home` are still what the findings saw."""
        return (
            self.chains is not None
            and _same_files(home, self.chains)
            and _env_key([data for _, data in self.chains]) == self.env
        )

    def at(self, home: Path) -> list[Finding]:
        """The findings with their paths under `home`."""
        if self.chains is None:
            return list(self.findings)
        return [_under(f, str(home)) for f in self.findings]


# frozen records, rebased into new findings on every hit: nothing to copy
_KEPT = ContentMemo(max_entries=64, copy=SHARED)


def reused_findings(s: StepUnderCheck, compute: Callable[[], list[Finding]]) -> list[Finding]:
    """`compute()` (the configs and config keys checks of `s`), or what it gave for equal
    inputs; `compute` records the files each config was compiled from in `s.sources`."""
    from runners.config.compiler import register_resolvers

    register_resolvers()  # before the environment is read: it may set STEPS_HOME
    home = s.entry.dir
    key = _key(s) if home.is_absolute() else None
    if key is None:
        return compute()

    def make() -> _Findings | Unkept[_Findings]:
        findings = compute()
        unkept = Unkept(_Findings(tuple(findings)))
        chains = _chains(home, s.sources)
        relative = _relative(findings, str(home))
        if chains is None or relative is None:
            return unkept
        return _Findings(relative, chains, _env_key([data for _, data in chains]))

    held = len(key[0]) + sum(len(data) for _, data in key[1])  # the key's own bytes

    def size(kept: _Findings) -> int:
        return held + sum(len(data) for _, data in kept.chains or ())

    kept = _KEPT.get(key, make, size=size, valid=lambda r: r.still_true(home))
    return kept.at(home)


def _key(s: StepUnderCheck) -> tuple | None:
    """The step.toml and each config's own bytes, and the resolvers (by name and identity)."""
    from omegaconf.basecontainer import BaseContainer

    e = s.entry
    try:
        own = tuple((n, e.config_path(n).read_bytes()) for n in e.config_names())
        manifest = e.manifest_path.read_bytes()
    except OSError:
        return None
    resolvers = tuple(sorted((n, id(f)) for n, f in BaseContainer._resolvers.items()))
    return manifest, own, resolvers


def _chains(home: Path, sources: list[Path] | None) -> tuple | None:
    """Every file the configs were compiled from, relative to the step folder, with its bytes
    (None when one lies outside it, cannot be read, or a config did not load)."""
    if sources is None:
        return None
    rels = set()
    for src in sources:
        rel = os.path.relpath(src, home)
        if rel.startswith("..") or os.path.isabs(rel):
            return None
        rels.add(rel)
    try:
        return tuple((rel, (home / rel).read_bytes()) for rel in sorted(rels))
    except OSError:
        return None


def _same_files(home: Path, chains: tuple) -> bool:
    try:
        return all((home / rel).read_bytes() == data for rel, data in chains)
    except OSError:
        return False


def _env_key(texts: list[bytes]) -> tuple:
    """What of the environment the files can see through `${oc.env:...}`."""
    seen: dict[str, bool] = {}  # variable -> whether its value (not only its presence) counts
    for text in texts:
        if text.count(b"oc.env") != len(_ENV.findall(text)):
            return ("all", tuple(sorted(os.environ.items())))
        depth, at = 0, 0
        for m in _ENV.finditer(text):
            depth, at = _depth(text, at, m.start(), depth), m.end()
            name = m.group(1).decode()
            seen[name] = seen.get(name, False) or depth > 0
    return tuple(
        (n, os.environ.get(n) if value else n in os.environ) for n, value in sorted(seen.items())
    )


def _depth(text: bytes, start: int, end: int, depth: int) -> int:
    """How many interpolations are open at `end`, from `depth` open at `start`. A `}` outside
    any is YAML's own; one inside closes it or a `{` opened in it. Errs towards open, which
    only makes a variable's value count."""
    i = start
    while i < end:
        if text.startswith(b"${", i):
            depth, i = depth + 1, i + 2
            continue
        if depth and text[i] == ord("{"):
            depth += 1
        elif depth and text[i] == ord("}"):
            depth -= 1
        i += 1
    return depth


def _relative(findings: list[Finding], home: str) -> tuple[Finding, ...] | None:
    """The findings with their paths relative to `home` (None when one is not under it, or
    names it in its text: it would not move with a copy of the folder)."""
    out = []
    for f in findings:
        if any(home in (t or "") for t in (f.message, f.fix, f.key)):
            return None
        path = f.path
        if path is not None:
            path = os.path.relpath(path, home)
            if not os.path.isabs(f.path or "") or path.startswith(".."):
                return None
        moved = dataclasses.replace(f, path=path)
        if _under(moved, home) != f:
            return None
        out.append(moved)
    return tuple(out)


def _under(f: Finding, home: str) -> Finding:
    """The finding with its relative path joined under `home`."""
    return f if f.path is None else dataclasses.replace(f, path=os.path.join(home, f.path))
