"""Which NeMo-Gym judges a row: its version, and the row vocabulary that version takes.

The Gym that will run decides the row contract, as the NeMo-RL version decides the config
schema. A Gym is named by a version (`0.7.0`) or by a folder: a Gym checkout, an installed
package's site-packages, or a NeMo-RL checkout (its Gym submodule). A folder's vocabulary is
derived from its source (gym_source.py) once per version and cached in the user cache dir
($STEPS_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache, under nemo-rl-steps/gym/); a bare
version takes the set shipped in catalog/schema/rows/nemo_gym_versions.json (the pin and the
supported releases), else one cached from an earlier derivation. Nothing here imports Gym.

Without a Gym tree, the task-field check (E-GYM-TASK-FIELD) stands on the pinned Gym's routes
(`pinned_routes`: agent -> server -> fields), which `tools/gen_gym_servers.py` derives at build
time with the same code that reads a tree at run time (gym_routes.py, gym_servers.py).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from catalog.atomic_write import write_atomic
from catalog.contracts.gym_source import MODEL_FILE, derive_vocabulary, gym_root_of, read_version
from catalog.discovery import cache_home
from catalog.errors import StepsError
from catalog.record_file import read_json
from catalog.upstream import GYM_SUBDIR, NEMO_RL_CONTAINER_PATH, NEMO_RL_HOME_VAR

ROWS_SCHEMA = Path(__file__).resolve().parent.parent / "schema" / "rows"
SHIPPED = ROWS_SCHEMA / "nemo_gym_versions.json"
PINNED_SERVERS = ROWS_SCHEMA / "nemo_gym_servers.json"
CODE = "E-GYM-VERSION"


@dataclass(frozen=True)
class GymFacts:
    """The row vocabulary of one Gym: `request_fields` maps each request key to the JSON types
    its value may have (None: not checked); `item_types` / `content_parts` None means any."""

    version: str
    request_fields: Mapping[str, frozenset[str] | None]
    message_roles: frozenset[str]
    item_types: frozenset[str] | None
    content_parts: frozenset[str] | None
    messages_discriminated: bool
    source: str

    @property
    def label(self) -> str:
        """How findings name this Gym: `NeMo-Gym 0.7.0`."""
        return f"NeMo-Gym {self.version}"

    def has_item(self, kind: str) -> bool:
        return self.item_types is None or kind in self.item_types

    def has_part(self, kind: str) -> bool:
        return self.content_parts is None or kind in self.content_parts

    @classmethod
    def from_dict(cls, version: str, data: Mapping[str, Any], source: str) -> GymFacts:
        def opt(values: Any) -> frozenset[str] | None:
            return frozenset(values) if values is not None else None

        return cls(
            version=version,
            request_fields={k: opt(v) for k, v in data["request_fields"].items()},
            message_roles=frozenset(data["message_roles"]),
            item_types=opt(data["item_types"]),
            content_parts=opt(data["content_parts"]),
            messages_discriminated=bool(data["messages_discriminated"]),
            source=source,
        )


@cache
def _shipped() -> dict[str, Any]:
    return read_json(SHIPPED)


def pin_version() -> str:
    """The version of the pinned Gym commit (catalog.upstream.NEMO_GYM_COMMIT)."""
    return _shipped()["pin"]


def shipped_versions() -> list[str]:
    return sorted(_shipped()["versions"], key=_version_key)


def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in version.replace("-", ".").split("."))


def cache_dir() -> Path:
    return cache_home(None, "gym")


def _cached(version: str) -> dict | None:
    try:
        data = read_json(cache_dir() / f"{version}.json")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "request_fields" in data else None


def _save(version: str, data: dict) -> None:
    """Best effort and atomic: a read-only cache dir only costs a derivation next time."""
    with contextlib.suppress(OSError):
        write_atomic(cache_dir() / f"{version}.json", json.dumps(data, indent=1, sort_keys=True))


def from_checkout(root: Path) -> GymFacts:
    """The facts of the Gym source at `root` (a folder gym_root_of accepts), cached by
    version and re-derived when that version's source changed."""
    model = root / MODEL_FILE
    st = model.stat()
    return _from_source(str(model), st.st_mtime_ns, st.st_size)


@cache
def _from_source(model: str, _mtime: int, _size: int) -> GymFacts:
    import hashlib

    path = Path(model)
    text = path.read_bytes()
    digest = hashlib.sha256(text).hexdigest()
    root = path.parent.parent
    version = read_version(root) or f"dev-{digest[:12]}"
    data = _cached(version)
    if data is None or data.get("source_digest") != digest:
        data = derive_vocabulary(text.decode("utf-8", "replace"), str(path))
        data["source_digest"] = digest
        _save(version, data)
    return GymFacts.from_dict(version, data, str(root))


def _as_folder(spec: str) -> Path | None:
    """`spec` as a folder path when it names one (or looks like a path), else None."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return path
    if os.sep in spec or spec.startswith((".", "~")):
        fix = "give a NeMo-Gym version (e.g. 0.7.0) or a Gym or NeMo-RL checkout folder"
        raise StepsError(CODE, f"{spec} is not a folder", fix=fix, exit_code=2)
    return None


def gym_facts(spec: str | None = None) -> GymFacts:
    """The facts of the Gym `spec` names: None (the pin), a version, or a source folder."""
    if spec is None:
        spec = pin_version()
    folder = _as_folder(spec)
    if folder is not None:
        root = gym_root_of(folder)
        if root is None:
            raise StepsError(
                CODE,
                f"{folder} holds no NeMo-Gym source ({MODEL_FILE}, or {GYM_SUBDIR}/"
                f"{MODEL_FILE} in a NeMo-RL checkout)",
                fix="point at a NeMo-Gym checkout, a NeMo-RL checkout with its Gym submodule "
                "checked out (git submodule update --init), or give a version",
                exit_code=2,
            )
        return from_checkout(root)
    version = spec.removeprefix("v")
    if version in _shipped()["versions"]:
        return _shipped_facts(version)
    cached = _cached(version)
    if cached is not None:
        return GymFacts.from_dict(version, cached, "cache")
    raise StepsError(
        CODE,
        f"no row contract known for NeMo-Gym {version}: shipped for "
        f"{', '.join(shipped_versions())} (pin {pin_version()})",
        fix="pass --gym-version DIR (a Gym checkout, or a NeMo-RL checkout with its Gym "
        "submodule) once to derive it, or use a shipped version",
        exit_code=2,
    )


@cache
def _shipped_facts(version: str) -> GymFacts:
    return GymFacts.from_dict(version, _shipped()["versions"][version], "shipped")


def installed_gym() -> Path | None:
    """The folder holding an installed `nemo_gym`, found by the import system's finders without
    importing it (importlib.metadata, which costs ~40 ms to load, only when one is there)."""
    from importlib.util import find_spec

    spec = find_spec("nemo_gym")
    if spec is None or not spec.submodule_search_locations:
        return None
    from importlib import metadata

    try:
        root = Path(str(metadata.distribution("nemo-gym").locate_file("")))
    except metadata.PackageNotFoundError:  # a source tree on sys.path, not an installed one
        root = Path(next(iter(spec.submodule_search_locations))).parent
    return root if gym_root_of(root) == root else None


def detect_gym(env: Mapping[str, str] | None = None, tree_only: bool = False) -> str | None:
    """The Gym that will run when nothing names one: an installed nemo_gym, else the Gym
    submodule of $NEMO_RL_HOME or of the container's NeMo-RL; None (the pin) when none.
    `tree_only`: a submodule without nemo_gym/ will do (its configs and servers are read)."""
    env = os.environ if env is None else env
    found = installed_gym()
    if found is not None:
        return str(found)
    for checkout in (env.get(NEMO_RL_HOME_VAR), NEMO_RL_CONTAINER_PATH):
        sub = Path(checkout).expanduser() / GYM_SUBDIR if checkout else None
        if sub is not None and (sub.is_dir() if tree_only else gym_root_of(sub) is not None):
            return str(sub)
    return None


@cache
def _table() -> dict[str, Any]:
    return read_json(PINNED_SERVERS)


def pinned_routes(agents: Any = None) -> dict[str, dict]:
    """The row contract's `routes` option (agent -> its server's fields) for `agents` (all when
    None) that the pinned Gym defines with a server whose fields were derived."""
    table = _table()
    out: dict[str, dict] = {}
    for agent, server in table["agents"].items():
        spec = table["servers"].get(server)
        if (agents is None or agent in agents) and spec is not None and spec["reason"] is None:
            out[agent] = {"server": server, "fields": spec["fields"]}
    return out


def pinned_commit() -> str:
    """The Gym commit the table was derived from, short."""
    return str(_table()["gym_commit"])[:7]
