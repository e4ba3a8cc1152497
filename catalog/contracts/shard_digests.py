"""An rl_prep output's shards against the digests its manifest records (a damaged shard of the
right size and valid rows still differs from what was written).

The fast `xxh3_128` is checked where the manifest has it, else `sha256` (older manifests): both
catch accidental change, and neither can stop someone who may rewrite the manifest too.
"""

from __future__ import annotations

from pathlib import Path

from catalog.errors import Finding
from catalog.file_digest import SHA256, XXH3, file_digests
from catalog.record_file import read_json

CODE = "E-SHARD-DIGEST"
MANIFEST = "manifest.json"


def _manifest_of(path: Path) -> Path | None:
    if path.is_dir() and (path / MANIFEST).is_file():
        return path / MANIFEST
    return path if path.name == MANIFEST and path.is_file() else None


def _recorded(manifest: Path) -> list[tuple[Path, str, str]]:
    """(shard, digest name, recorded hex) for every shard whose entry records a digest; an
    unreadable manifest is the row scan's finding, not this one's."""
    try:
        splits = read_json(manifest)["splits"]
        entries = [s for split in splits.values() for s in split["shards"]]
    except (OSError, ValueError, RecursionError, KeyError, TypeError, AttributeError):
        return []
    out = []
    for shard in entries:
        if not isinstance(shard, dict) or not isinstance(shard.get("path"), str):
            continue
        name = next((n for n in (XXH3, SHA256) if isinstance(shard.get(n), str)), None)
        if name is not None:
            out.append((manifest.parent / shard["path"], name, shard[name]))
    return out


def shard_digest_findings(path: Path) -> list[Finding]:
    """One error per shard whose content is not what the manifest at `path` records (none when
    `path` is not an rl_prep output or manifest; a missing shard is reported by the scan)."""
    manifest = _manifest_of(Path(path))
    if manifest is None:
        return []
    findings = []
    for shard, name, recorded in _recorded(manifest):
        try:
            found = file_digests(shard, (name,))[name]
        except OSError:
            continue
        if found != recorded:
            findings.append(
                Finding(
                    CODE,
                    f"shard {shard.relative_to(manifest.parent)} differs from what rl_prep "
                    f"wrote: {name} {found[:16]}..., the manifest records {recorded[:16]}...",
                    str(shard),
                    fix="the shard was damaged or edited after rl_prep wrote it: run rl_prep "
                    "again (force=true) to rebuild the output",
                )
            )
    return findings
