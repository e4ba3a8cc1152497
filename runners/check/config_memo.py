"""A step's config findings reused while nothing they rest on has changed: compiling every config
and resolving each interpolation is most of `check`, and one process (the tests, `check` over
several roots) checks the same step files again and again, often copied to another folder.

What the findings rest on, compared by content: the step.toml, the names and bytes of its
configs, the bytes of every file of each config's `defaults:` chain, the registered resolvers and
the environment variables the files read with `${oc.env:VAR}`: whether each is set, and its value
where it sits inside another interpolation (the whole environment when a file names a variable
in a way not read here). Paths are kept relative to the step folder, so a copy of the step
elsewhere reuses them; a step whose files or findings leave its folder, or whose config does not
load, is not kept.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from catalog.errors import Finding
from runners.check.step_under_check import StepUnderCheck

MAX_KEPT = 64
# `${oc.env:VAR}` or `${oc.env:VAR,default}` with a plain default: its value is a string that
# nothing else reads unless the interpolation sits inside another one.
_ENV = re.compile(rb"\$\{\s*oc\.env\s*:\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:,[^${}\n]*)?\}")
_KEPT: OrderedDict[tuple, tuple[tuple, tuple, tuple[Finding, ...]]] = OrderedDict()


def reused_findings(s: StepUnderCheck, compute: Callable[[], list[Finding]]) -> list[Finding]:
    """`compute()` (the configs and config keys checks of `s`), or what it gave for equal
    inputs; `compute` records the files each config was compiled from in `s.sources`."""
    from runners.config.compiler import register_resolvers

    register_resolvers()  # before the environment is read: it may set STEPS_HOME
    home = s.entry.dir
    key = _key(s) if home.is_absolute() else None
    kept = _KEPT.get(key) if key is not None else None
    if kept is not None:
        chains, env, relative = kept
        if _same_files(home, chains) and _env_key([data for _, data in chains]) == env:
            _KEPT.move_to_end(key)
            return [_rebase(f, "", str(home)) for f in relative]
    findings = compute()
    chains = _chains(home, s.sources)
    if key is None or chains is None:
        return findings
    relative = [_rebase(f, str(home), "") for f in findings]
    if any(
        r is None or _rebase(r, "", str(home)) != f for r, f in zip(relative, findings, strict=True)
    ):
        return findings  # a path or a text that does not move with the folder
    _KEPT[key] = (chains, _env_key([data for _, data in chains]), tuple(relative))
    while len(_KEPT) > MAX_KEPT:
        _KEPT.popitem(last=False)
    return findings


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


def _rebase(f: Finding, old: str, new: str) -> Finding | None:
    """The finding with its path moved from under `old` to under `new` (None when it is not
    under `old`, or names `old` in its text)."""
    if old and any(old in (t or "") for t in (f.message, f.fix, f.key)):
        return None
    path = f.path
    if path is not None and old:
        rel = os.path.relpath(path, old)
        if not os.path.isabs(path) or rel.startswith(".."):
            return None
        path = rel
    elif path is not None:
        path = os.path.join(new, path)
    return dataclasses.replace(f, path=path)
