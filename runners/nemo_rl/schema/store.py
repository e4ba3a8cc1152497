"""Which schema a run is checked against, and the per-commit cache of derived schemas.

A clean checkout at a shipped version's commit, or a version given by name (a profile's
`nemo_rl_version`), uses the shipped schema; another checkout's is derived once and cached under
`<cache home>/nemo_rl_schema/<commit>[-<fingerprint of the files read, if dirty>]/`; with
neither, the pin's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from catalog.atomic_write import write_atomic
from catalog.content_memo import SHARED, ContentMemo
from catalog.discovery import cache_home
from catalog.nemo_rl_version import NemoRLVersion, pin_version
from catalog.record_file import parse_json, read_capped, read_json
from catalog.upstream import NEMO_RL_PIN_LABEL, NEMO_RL_SCHEMA_DIR
from runners.nemo_rl.schema import ROOTS, derive, has_source

CACHE_FORMAT = "4"  # bump when the derived document changes shape
READ_DIRS = ("nemo_rl", "examples")  # what derivation reads: the fingerprint covers these
# Shipped documents by content: every dry run and check reads one (~5 ms of JSON each), and
# their readers only read them (`cached_schema_for` already hands one document to all of them).
_SHIPPED = ContentMemo(max_entries=32, copy=SHARED)


@dataclass(frozen=True)
class Schema:
    """A schema document and where it came from (`shipped 0.7.0`, `derived, cached at ...`)."""

    doc: dict
    origin: str


def cache_root(env: dict[str, str] | None = None) -> Path:
    """The same base the manifest cache uses (catalog.discovery)."""
    return cache_home(env, "nemo_rl_schema")


def shipped_schema(label: str, algorithm: str) -> dict | None:
    """The schema shipped for `label`, read-only (parsed once per content in a process)."""
    path = NEMO_RL_SCHEMA_DIR / label / f"{algorithm}.json"
    if not path.is_file():
        return None
    raw = read_capped(path)
    return _SHIPPED.get(raw, lambda: parse_json(raw), size=len(raw))


def fingerprint(checkout: Path) -> str:
    """Names, sizes and mtimes of the files derivation reads: changes when any of them does."""
    digest = hashlib.sha256()
    for sub in READ_DIRS:
        for root, dirs, files in os.walk(checkout / sub):
            dirs.sort()
            for name in sorted(files):
                if name.endswith((".py", ".yaml", ".yml")):
                    st = os.stat(os.path.join(root, name))
                    rel = os.path.relpath(os.path.join(root, name), checkout)
                    digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def _git_clean(checkout: Path) -> bool:
    try:
        out = subprocess.run(
            ["git", "-C", str(checkout), "status", "--porcelain", "-uno", "--", *READ_DIRS],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and not out.stdout.strip()


def cache_key(checkout: Path, version: NemoRLVersion | None) -> str:
    """`<commit>` for a clean git checkout, else `<commit or version>-<fingerprint>`."""
    commit = version.commit if version else None
    if commit and _git_clean(checkout):
        return commit
    return f"{commit or (version.number if version else 'unknown')}-{fingerprint(checkout)}"


def derived_schema(checkout: Path, algorithm: str, version: NemoRLVersion | None) -> Schema:
    """From the cache, else derived now (every algorithm at once) and cached."""
    folder = cache_root() / f"v{CACHE_FORMAT}" / cache_key(checkout, version)
    path = folder / f"{algorithm}.json"
    try:
        return Schema(read_json(path), f"derived, cached at {path}")
    except (OSError, ValueError):
        pass
    upstream = {"commit": version.commit if version else None, "checkout": str(checkout)}
    if version is not None:
        upstream["version"] = version.label
    docs = derive(checkout, tuple(a for a in ROOTS if has_source(checkout, a)), upstream)
    for algo, doc in docs.items():
        _write(folder / f"{algo}.json", json.dumps(doc, indent=1) + "\n")
    return Schema(docs[algorithm], f"derived from {checkout} now, cached at {path}")


def _write(path: Path, text: str) -> None:
    """Best effort: a read-only cache only costs a derivation next time."""
    with contextlib.suppress(OSError):
        write_atomic(path, text)


def schema_for(
    algorithm: str, checkout: Path | None = None, version: NemoRLVersion | None = None
) -> Schema | None:
    """The schema a config for `algorithm` is checked against; None for an unknown algorithm."""
    if algorithm not in ROOTS:
        return None
    source = checkout if checkout is not None and has_source(checkout, algorithm) else None
    exact = source is None or bool(version and version.commit and _git_clean(source))
    if version is not None and version.shipped and (exact or version.named):
        doc = shipped_schema(version.shipped, algorithm)
        if doc is not None:
            return Schema(doc, f"shipped for {version.label}")
    if source is not None:
        return derived_schema(source, algorithm, version)
    doc = shipped_schema(NEMO_RL_PIN_LABEL, algorithm)
    named = f"no schema ships for {version.label}; " if version is not None else ""
    return Schema(doc, f"{named}shipped for {pin_version().label}") if doc else None


@lru_cache(maxsize=16)
def cached_schema_for(
    algorithm: str, checkout: Path | None, version: NemoRLVersion | None
) -> Schema | None:
    """`schema_for` once per process: compile (overlays) and preflight share it."""
    return schema_for(algorithm, checkout, version)
