"""The registry file `<runs root>/artifacts.json`: named artifacts, versions and aliases. A version
is added only for new content (as W&B dedups); writers hold the lock beside it and rewrite the
whole file atomically."""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from catalog.atomic_write import write_atomic
from catalog.did_you_mean import close_matches, phrase
from catalog.errors import StepsError
from catalog.file_trust import untrusted
from catalog.record_file import exists_as, read_json, reason
from runners.artifacts.names import LATEST, Ref
from runners.digest import DigestMemo, content_digest

REGISTRY = "artifacts.json"
LOCK = ".artifacts.lock"


class InputRecord(BaseModel):
    """An input of the producing run: where it was, its digest then, the artifact it was."""

    port: str
    type: str
    path: str
    digest: str | None = None  # None: a hub id (named, not hashed)
    artifact: str | None = None  # NAME:vN when it was a registered version


class Provenance(BaseModel):
    """How a version was made: the run, its config's digest, its inputs, the NeMo-RL it ran on."""

    model_config = ConfigDict(extra="allow")

    step: str
    run_dir: str | None = None
    config_digest: str | None = None  # sha256 of the run dir's config.yaml
    nemo_rl_version: dict | None = None
    inputs: list[InputRecord] = []


class Watch(BaseModel):
    """How to tell a local exec's run ended (its pid), and where its training ends."""

    host: str
    pid: int | None = None
    started: str | None = None  # the process's start time: a reused pid is another process
    max_steps: int | None = None
    max_epochs: int | None = None


class Version(BaseModel):
    """One version of a named artifact; `pending` ones get a digest once settled."""

    model_config = ConfigDict(extra="allow")

    version: int
    type: str
    digest: str | None = None  # xxh3_128:<hex> of the content (a folder: its files' digests)
    path: str
    port: str
    made_by: Provenance
    created_utc: str = ""
    files: int = 0
    bytes: int = 0
    state: Literal["ready", "pending", "failed"] = "ready"
    reason: str | None = None  # why it failed, or why a ready one has no digest
    watch: Watch | None = None
    wandb: dict | None = None  # W&B settings to log it to once ready, then what was logged

    @property
    def label(self) -> str:
        return f"v{self.version}"


class Entry(BaseModel):
    model_config = ConfigDict(extra="allow")

    versions: list[Version] = []
    aliases: dict[str, int] = {}  # alias -> version number


class RegistryFile(BaseModel):
    """artifacts.json; keys this version does not know are kept."""

    model_config = ConfigDict(extra="allow")

    format: int = 1
    artifacts: dict[str, Entry] = {}


@dataclass
class Output:
    """An output a run wrote, to be registered under `name`."""

    name: str
    type: str
    path: str
    port: str


@dataclass
class Registered:
    name: str
    version: Version
    new: bool  # False: the same content was registered before

    def __str__(self) -> str:
        return f"{self.name}:{self.version.label}"


def registry_path(root: Path) -> Path:
    return Path(root) / REGISTRY


def load(root: Path) -> RegistryFile:
    """The registry under `root` (empty when none), used only when it and its folder are yours
    alone (E-RECORD-UNTRUSTED) and read by the bounded reader (E-ARTIFACT-REGISTRY)."""
    path = registry_path(root)
    if not path.is_symlink() and not exists_as(path):
        return RegistryFile()
    refused = untrusted(
        [(path, False), (Path(root), True)],
        f"the artifact registry {path}",
        "a registry decides which data and checkpoints a name gives, so it is used only when it "
        "is yours and no one else can write it or its folder",
        "move it aside (runs keep their run.json) and pass inputs as paths",
    )
    if refused is not None:
        raise refused
    try:
        return RegistryFile.model_validate(read_json(path))
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise StepsError(
            "E-ARTIFACT-REGISTRY",
            f"cannot read the artifact registry: {reason(exc)}",
            path=str(path),
            fix="restore it from a backup, or move it aside (the runs it lists keep their "
            "run.json)",
            exit_code=2,
        ) from None


@contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold the registry's lock (one writer at a time across processes)."""
    Path(root).mkdir(parents=True, exist_ok=True)
    with open(Path(root) / LOCK, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def register(
    root: Path,
    outputs: list[Output],
    made_by: Provenance,
    memo: DigestMemo,
    pending: bool = False,
    watch: Watch | None = None,
    wandb: dict | None = None,
) -> list[Registered]:
    """Add each existing output as a new version (new content only), or each as pending."""
    done: list[Registered] = []
    with locked(root):
        reg = load(root)
        for out in outputs:
            path = Path(out.path)
            entry = reg.artifacts.setdefault(out.name, Entry())
            if pending:
                version = new_version(entry, out, made_by, None, state="pending", watch=watch,
                                      wandb=wandb)  # fmt: skip
                done.append(Registered(out.name, version, True))
                continue
            if not path.exists():
                continue
            digest, files, size = content_digest(path, memo)
            same = [v for v in entry.versions if (v.digest, v.path) == (digest, str(path))]
            if same:
                version, new = same[-1], False
                entry.aliases[LATEST] = version.version
            else:
                version = new_version(entry, out, made_by, digest, files=files, bytes=size)
                new = True
            done.append(Registered(out.name, version, new))
        if done:
            save(root, reg)
    return done


def new_version(
    entry: Entry, out: Output, made_by: Provenance, digest: str | None, **more: object
) -> Version:
    """The next version of `entry`, added and named `latest`."""
    version = Version.model_validate(
        {
            "version": 1 + max((v.version for v in entry.versions), default=-1),
            "type": out.type,
            "digest": digest,
            "path": str(out.path),
            "port": out.port,
            "made_by": made_by,
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **more,
        }
    )
    entry.versions.append(version)
    entry.aliases[LATEST] = version.version
    return version


def save(root: Path, reg: RegistryFile) -> None:
    """Write the whole registry atomically (the caller holds `locked(root)`)."""
    write_atomic(registry_path(root), reg.model_dump_json(indent=2, exclude_none=True) + "\n")


def lookup(reg: RegistryFile, ref: Ref, root: Path) -> Version:
    """The version `ref` names; E-ARTIFACT-UNKNOWN (did-you-mean) when there is none."""
    entry = reg.artifacts.get(ref.name)
    where = str(registry_path(root))
    if entry is None:
        names = sorted(reg.artifacts)
        hint = phrase(close_matches(ref.name, names))
        known = ", ".join(names) or "none yet"
        raise StepsError(
            "E-ARTIFACT-UNKNOWN",
            f"no artifact named '{ref.name}' in the registry",
            path=where,
            fix=(f"{hint} " if hint else "") + f"registered: {known} (`python -m steps lineage "
            "NAME` shows one; a run registers its outputs when it completes)",
            exit_code=2,
        )
    number = ref.version if ref.version is not None else entry.aliases.get(ref.tag)
    found = next((v for v in entry.versions if v.version == number), None)
    if found is None:
        tags = [*entry.aliases, *(v.label for v in entry.versions)]
        hint = phrase(close_matches(ref.tag, tags))
        raise StepsError(
            "E-ARTIFACT-UNKNOWN",
            f"artifact '{ref.name}' has no version or alias '{ref.tag}'",
            path=where,
            fix=(f"{hint} " if hint else "") + f"use one of: {', '.join(tags)}",
            exit_code=2,
        )
    return found


def version_holding(reg: RegistryFile, path: str) -> tuple[str, Version] | None:
    """The newest registered version at `path` or holding it (a shard of a prepared folder)."""
    best = None
    for name, entry in reg.artifacts.items():
        for v in entry.versions:
            if v.state != "ready":
                continue
            if path == v.path or path.startswith(v.path.rstrip("/") + "/"):
                best = (name, v) if best is None or v.created_utc >= best[1].created_utc else best
    return best


def check_content(name: str, v: Version, memo: DigestMemo) -> None:
    """E-ARTIFACT-DIGEST (exit 2) when a ready version's content is not what was registered:
    the digest recorded then against the content now (one `stat` per file the memo knows, as
    the producing run hashed it). A path not here is left to bind, which names it."""
    if v.state != "ready" or v.digest is None or not exists_as(Path(v.path)):
        return
    now = content_digest(Path(v.path), memo)[0]
    if now == v.digest:
        return
    raise StepsError(
        "E-ARTIFACT-DIGEST",
        f"{name}:{v.label} is not what was registered: {v.path} has digest {now}, the registry "
        f"records {v.digest} (changed since {v.made_by.step} made it, or the registry was edited)",
        path=v.path,
        fix=f"if the change is yours, register the content as a new version by running the step "
        f"that makes it again (`python -m steps lineage {name}:{v.label}` shows how it was made), "
        "or pass the path itself (--input PORT=PATH); else restore the content",
        exit_code=2,
    )
