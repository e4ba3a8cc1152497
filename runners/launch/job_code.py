"""Our code staged with a job: steps/, runners/ and catalog/ as the job's `code/` folder.

Nothing of ours is installed on a cluster: a job runs a copy, as nemo-run ships a job's code
(`python3 JOB_DIR/code ...` puts `code/` first on sys.path, so the copy wins and PYTHONPATH is
left alone). One copy per fingerprint of the package (each kept file's path, size and mtime),
made once in this machine's cache and once under a profile's remote_dir (`_code/FINGERPRINT`);
a run dir's `code` links to it. Each copy is written aside and renamed, so a FINGERPRINT folder
is whole; a `.partial` older than ABANDONED_MINUTES was left by a killed copy and is removed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from runners.omegaconf_internals import SUPPORTED

CODE = "code"
SHARED = "_code"  # under remote_dir: one copy per fingerprint, linked from each job dir
PACKAGES = ("steps", "runners", "catalog")
KEEP = (".py", ".toml", ".yaml", ".yml", ".json", ".jsonl", ".md")
SEGMENT_PROGRAM = "runners/chain/segment_program.py"
# A copy takes seconds and its rsync is bounded (STEPS_STAGE_SECONDS, 600 s by default).
ABANDONED_MINUTES = 360
# What the job's Python must hold (NeMo-RL's image does: vLLM brings msgspec, datasets xxhash).
NEEDS = ("pydantic", "yaml", "omegaconf", "msgspec", "xxhash", "tqdm")
# The releases of those our code runs on, where it does not run on every one: distribution ->
# (from, below). A container outside a range exits 2 naming it, as one without the package does.
RELEASES = {"omegaconf": SUPPORTED, "pydantic": ((2, 6), (3,))}
MAIN = f'''"""`python3 JOB_DIR/code ARGS`: steps from the copy staged with this job."""
import importlib.metadata
import importlib.util
import re
import sys

where = f"in the Python that runs it ({{sys.executable}}, the container's)"
missing = [m for m in {NEEDS!r} if importlib.util.find_spec(m) is None]
if missing:
    print(f"No module named {{missing[0]!r}}: steps staged with this job needs "
          f"{{', '.join(missing)}} {{where}}", file=sys.stderr)
    sys.exit(2)
for dist, (low, below) in {RELEASES!r}.items():
    try:
        found = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        continue  # no metadata to compare: the import decides
    numbers = re.match(r"[0-9]+(?:[.][0-9]+)*", found)
    release = tuple(map(int, numbers[0].split("."))) if numbers else low
    if not low <= release < below:
        needs = f">={{'.'.join(map(str, low))}},<{{'.'.join(map(str, below))}}"
        print(f"{{dist}} {{found}} is not supported: steps staged with this job needs "
              f"{{dist}}{{needs}} {{where}}", file=sys.stderr)
        sys.exit(2)
from steps.cli import main

sys.exit(main())
'''
_SHIPPED: set[tuple[str, str]] = set()  # (where, remote copy) known whole in this process


class Stager(Protocol):
    """What `ship` needs of a launcher's shell (runners/launch/shell.py)."""

    @property
    def where(self) -> str: ...

    def put_once(self, local: Path, remote: str) -> None: ...


def _source_root() -> Path:
    return Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=1)
def source() -> tuple[str, tuple[str, ...]]:
    """The package's fingerprint and its kept files (relative paths)."""
    root, files = _source_root(), []
    digest = hashlib.sha256(MAIN.encode())
    for package in PACKAGES:
        for folder, dirs, names in os.walk(root / package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(n for n in names if n.endswith(KEEP)):
                path = os.path.join(folder, name)
                st, rel = os.stat(path), os.path.relpath(path, root)
                digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
                files.append(rel)
    return digest.hexdigest()[:20], tuple(files)


def cache_root() -> Path:
    """`$STEPS_CACHE_DIR` (else `$XDG_CACHE_HOME`, else ~/.cache) `/nemo-rl-steps/code`."""
    from catalog.discovery import cache_home

    return cache_home(None, CODE)


def write_aside(final: Path, fill: Callable[[Path], None]) -> None:
    """`final` made whole or not at all: `fill` writes a folder beside it, renamed into place
    (one another process put there first is as whole as ours)."""
    partial = final.with_name(f".{final.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    final.parent.mkdir(parents=True, exist_ok=True)
    sweep_abandoned(final.parent)
    try:
        fill(partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    try:
        partial.rename(final)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if not final.is_dir():
            raise


def sweep_abandoned(folder: Path) -> None:
    """Remove the `.*.partial` folders older than ABANDONED_MINUTES (younger may be filling)."""
    cutoff = time.time() - ABANDONED_MINUTES * 60
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if not (entry.name.startswith(".") and entry.name.endswith(".partial")):
            continue
        try:
            abandoned = entry.stat(follow_symlinks=False).st_mtime < cutoff
        except OSError:
            continue
        if abandoned:
            shutil.rmtree(entry.path, ignore_errors=True)


def _copy(dest: Path) -> None:
    root, (_, files) = _source_root(), source()
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)
    (dest / "__main__.py").write_text(MAIN, encoding="utf-8")


def shared_copy() -> Path:
    """This machine's whole copy of our code at its fingerprint, made now if missing."""
    final = cache_root() / source()[0]
    if not final.is_dir():
        write_aside(final, _copy)
    return final


def stage(run_dir: Path) -> None:
    """`run_dir/code`: a link (put in place by a rename) to this machine's shared copy."""
    link, aside = run_dir / CODE, run_dir / f".{CODE}.link"
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    aside.unlink(missing_ok=True)
    aside.symlink_to(shared_copy(), target_is_directory=True)
    aside.replace(link)


def ship(shell: Stager, run_dir: Path, remote_dir: str) -> str | None:
    """The shared copy `run_dir/code` links to, put once under remote_dir; its path there
    (None when the run dir has no code staged)."""
    link = run_dir / CODE
    if not link.is_symlink():
        return None
    remote = f"{remote_dir.rstrip('/')}/{SHARED}/{Path(os.readlink(link)).name}"
    if (shell.where, remote) not in _SHIPPED:
        shell.put_once(link.resolve(), remote)
        _SHIPPED.add((shell.where, remote))
    return remote


def steps_command(job_dir: str, profile: Any, python: str = "python3") -> list[str]:
    """How a job runs `steps`: the profile's `steps_launcher`, else `python` (the first
    `python3` on the job's PATH) on the copy staged with the run dir."""
    named = profile.steps_launcher
    return shlex.split(named) if named else [*shlex.split(python), f"{job_dir}/{CODE}"]


def segment_program(job_dir: str) -> str:
    """The chain's decision program in the staged copy, as the batch host sees the run dir."""
    return f"{job_dir}/{CODE}/{SEGMENT_PROGRAM}"
