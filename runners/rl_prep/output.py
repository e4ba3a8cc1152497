"""rl_prep's output folder: who owns it, whether it is up to date, and how it is replaced.

Work goes to `.<output>.partial-<host>-<pid>` beside it and is renamed into place, so a killed run
leaves the previous output or nothing; on a filesystem shared by hosts, a run removes only its own
host's dead work folders.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import socket
from pathlib import Path

from catalog.atomic_write import write_atomic
from catalog.errors import StepsError
from catalog.file_digest import XXH3
from catalog.record_file import read_json
from runners.digest import DigestMemo

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
DISTRIBUTION = "nemo-rl-steps"
WORK_KINDS = ("partial", "old")


def tool_version() -> str:
    """`steps <version>`: recorded in the manifest and part of the run key."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"steps {version(DISTRIBUTION)}"
    except PackageNotFoundError:  # a source tree that was never installed
        return "steps unknown"


def host_name() -> str:
    """This host's name as it appears in work folder names (no `-`, so names parse back)."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname()) or "localhost"


def work_dir(output_dir: Path, kind: str) -> Path:
    """This process's hidden work folder of `kind` (partial or old) beside `output_dir`."""
    return output_dir.parent / f".{output_dir.name}.{kind}-{host_name()}-{os.getpid()}"


def read_manifest(output_dir: Path) -> dict | None:
    try:
        data = read_json(output_dir / MANIFEST)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def check_ours(output_dir: Path) -> None:
    """Refuse to replace a folder rl_prep did not write (it would be deleted)."""
    if not output_dir.exists():
        return
    if not output_dir.is_dir():
        raise StepsError(
            "E-OUTPUT-DIR",
            "output_dir exists and is a file",
            path=str(output_dir),
            fix="point output_dir at a new or rl_prep-owned folder",
        )
    manifest = read_manifest(output_dir)
    ours = manifest is not None and str(manifest.get("tool", "")).startswith("steps ")
    if not ours and any(output_dir.iterdir()):
        raise StepsError(
            "E-OUTPUT-DIR",
            "output_dir exists, is not empty and has no rl_prep manifest; refusing to replace it",
            path=str(output_dir),
            fix="choose an empty or new output_dir, or remove this folder yourself",
        )


def shards(manifest: dict) -> list[dict]:
    return [shard for split in manifest["splits"].values() for shard in split["shards"]]


def up_to_date(output_dir: Path, key: str, memo: DigestMemo) -> dict | None:
    """The manifest if it has this run key and every shard is intact (size and xxh3_128, read again
    only when the shard's stat changed)."""
    manifest = read_manifest(output_dir)
    if manifest is None or manifest.get("run_key") != key:
        return None
    try:
        for shard in shards(manifest):
            path = output_dir / shard["path"]
            if path.stat().st_size != shard["bytes"] or memo.digest(path) != shard[XXH3]:
                return None
    except (OSError, KeyError, TypeError, AttributeError):
        return None
    return manifest


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(output_dir: Path) -> list[str]:
    """Remove work folders this host's dead runs left; the other hosts' ones, to mention."""
    here, others = host_name(), []
    for kind in WORK_KINDS:
        prefix = f".{output_dir.name}.{kind}-"
        for stale in sorted(output_dir.parent.glob(glob.escape(prefix) + "*")):
            host, _, pid = stale.name[len(prefix) :].rpartition("-")
            if not pid.isdigit():
                continue
            if host != here:
                others.append(str(stale))
            elif int(pid) == os.getpid() or not pid_alive(int(pid)):
                shutil.rmtree(stale, ignore_errors=True)
    return others


def write_json(path: Path, data: dict) -> None:
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def publish(staging: Path, output_dir: Path) -> None:
    """Swap the finished folder into place; the old output is removed only after."""
    if output_dir.exists():
        old = work_dir(output_dir, "old")
        os.replace(output_dir, old)
        os.replace(staging, output_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, output_dir)
