"""Find steps: every folder holding a `step.toml` under the built-in `steps/` tree and the extra
roots (`--catalog DIR`, `$STEPS_PATH`), whatever it is called; hidden folders and `__pycache__`
are not searched.

Reads raw TOML only (no pydantic) so `python -m steps list` stays close to Python start-up;
parsed manifests are cached per user as JSON (keyed by path, mtime, size and inode).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from catalog.record_file import read_json

BUILTIN_ROOT = Path(__file__).resolve().parent.parent / "steps"
STEPS_PATH_VAR = "STEPS_PATH"
CACHE_VAR = "STEPS_CACHE_DIR"
MANIFEST = "step.toml"
CACHE_FORMAT = 2  # bump when the cached data's shape changes (2: a file per catalog root)


class StepEntry:
    """A step folder and its raw manifest (`load_error` holds a TOML parse finding, if any)."""

    __slots__ = ("data", "dir", "id", "load_error", "root")

    def __init__(self, id: str, dir: Path, root: Path, data: dict, load_error=None) -> None:
        self.id, self.dir, self.root, self.data, self.load_error = id, dir, root, data, load_error

    def __repr__(self) -> str:
        return f"StepEntry(id={self.id!r}, dir={str(self.dir)!r})"

    @property
    def manifest_path(self) -> Path:
        return self.dir / MANIFEST

    @property
    def folder_id(self) -> str:
        return self.dir.relative_to(self.root).as_posix()

    @property
    def meta(self) -> dict:
        meta = self.data.get("step", {})
        return meta if isinstance(meta, dict) else {}

    @property
    def category(self) -> str:
        return str(self.meta.get("category", ""))

    @property
    def consumes(self) -> list[dict]:
        return [p for p in self.data.get("consumes", []) if isinstance(p, dict)]

    @property
    def produces(self) -> list[dict]:
        return [p for p in self.data.get("produces", []) if isinstance(p, dict)]

    @property
    def config_dir(self) -> Path:
        return self.dir / "config"

    def config_names(self) -> list[str]:
        if not self.config_dir.is_dir():
            return []
        return sorted(p.stem for p in self.config_dir.glob("*.yaml"))

    def config_path(self, name: str) -> Path:
        return self.config_dir / f"{name}.yaml"

    def shipped_config(self, name: str, also: str = "") -> Path:
        """The step's config `name`, or E-CONFIG-NOT-FOUND listing its configs (then `also`)."""
        path = self.config_path(name)
        if path.is_file():
            return path
        from catalog.errors import StepsError

        raise StepsError(
            "E-CONFIG-NOT-FOUND",
            f"step {self.id} has no config '{name}'",
            path=str(self.config_dir),
            fix=f"use one of: {', '.join(self.config_names()) or 'none'}{also}",
            exit_code=2,
        )


def catalog_roots(extra: Iterable[str | Path] = (), include_builtin: bool = True) -> list[Path]:
    """Built-in root first (unless excluded), then `--catalog` dirs, then `$STEPS_PATH` entries."""
    roots = [BUILTIN_ROOT] if include_builtin else []
    roots += [Path(p) for p in extra]
    env = os.environ.get(STEPS_PATH_VAR, "")
    roots += [Path(p) for p in env.split(os.pathsep) if p]
    seen: list[Path] = []
    for r in roots:
        r = r.expanduser().resolve()
        if r not in seen:
            seen.append(r)
    return seen


def _manifest_dirs(root: Path) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        if MANIFEST in filenames:
            yield Path(dirpath)


def cache_home(env: Mapping[str, str] | None = None, *parts: str) -> Path:
    """The one rule for where steps caches: `$STEPS_CACHE_DIR` (else `$XDG_CACHE_HOME`, else
    ~/.cache) `/nemo-rl-steps/`, then `parts`; `env` defaults to this process's."""
    env = os.environ if env is None else env
    base = env.get(CACHE_VAR) or env.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser().joinpath("nemo-rl-steps", *parts)


def _cache_file(root: Path) -> Path:
    """One file per catalog root, so a `list` reads only its own roots' manifests (a shared
    file grew with every catalog copy ever listed on the machine)."""
    import zlib

    name = f"{zlib.crc32(str(root).encode()):08x}-{root.name or 'root'}.json"
    return cache_home(None, f"manifests-v{CACHE_FORMAT}", name)


class _ManifestCache:
    """Parsed manifests of one root by full path and [mtime_ns, size, inode] (a crc32 collision
    of two roots only shares a file); JSON, so a TOML datetime is simply not cached."""

    def __init__(self, root: Path) -> None:
        self.path = _cache_file(root)
        self.dirty = False
        try:
            doc = read_json(self.path)
            ok = isinstance(doc, dict) and doc.get("format") == CACHE_FORMAT
            self.entries: dict = doc["entries"] if ok and isinstance(doc["entries"], dict) else {}
        except (OSError, ValueError, KeyError):
            self.entries = {}

    def load(self, manifest: Path) -> dict:
        """The manifest's data; raises `StepsError` (E-MANIFEST-TOML) naming file and line."""
        st = manifest.stat()
        stamp = [st.st_mtime_ns, st.st_size, st.st_ino]
        key = str(manifest)
        hit = self.entries.get(key)
        if isinstance(hit, list) and len(hit) == 2 and hit[0] == stamp:
            return hit[1]
        from catalog.tomlfile import load_toml

        data = load_toml(manifest, code="E-MANIFEST-TOML")
        if _json_exact(data):
            self.entries[key] = [stamp, data]
            self.dirty = True
        return data

    def save(self) -> None:
        """Best effort and atomic: a read-only home just means no cache."""
        if not self.dirty:
            return
        import json

        from catalog.atomic_write import write_atomic

        # Manifests that are gone (a deleted catalog, a temp dir) leave: every `list` reads it all.
        live = {k: v for k, v in self.entries.items() if os.path.exists(k)}
        doc = {"format": CACHE_FORMAT, "entries": live}
        with contextlib.suppress(OSError):
            write_atomic(self.path, json.dumps(doc, separators=(",", ":")))


def _json_exact(value: object) -> bool:
    """True when JSON gives `value` back unchanged (TOML dates and times do not survive)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_exact(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_json_exact(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def require_roots(roots: Iterable[Path]) -> None:
    """Every root is a directory, else E-CATALOG-ROOT (exit 2) naming the first that is not."""
    for root in roots:
        if not root.is_dir():
            from catalog.errors import StepsError  # deferred: `list` never pays for dataclasses

            raise StepsError(
                "E-CATALOG-ROOT",
                "catalog root is not a directory",
                path=str(root),
                fix=f"pass an existing folder to --catalog or fix ${STEPS_PATH_VAR}",
                exit_code=2,
            )


def discover(
    extra_roots: Iterable[str | Path] = (), strict: bool = True, include_builtin: bool = True
) -> list[StepEntry]:
    """Every step under every root (`catalog_roots`), sorted by id."""
    return discover_roots(catalog_roots(extra_roots, include_builtin), strict)


def discover_roots(roots: Iterable[Path], strict: bool = True) -> list[StepEntry]:
    """Every step under exactly these roots (each a directory), sorted by id; with `strict=False`
    a manifest that does not parse is kept, empty, with its finding in `load_error`."""
    roots = list(roots)
    require_roots(roots)
    entries: list[StepEntry] = []
    for root in roots:
        cache = _ManifestCache(root)
        for d in _manifest_dirs(root):
            error = None
            try:
                data = cache.load(d / MANIFEST)
            except Exception as exc:
                from catalog.errors import StepsError

                if strict or not isinstance(exc, StepsError):
                    cache.save()
                    raise
                data, error = {}, exc.finding
            meta = data.get("step")
            sid = meta.get("id") if isinstance(meta, dict) else None
            folder_id = d.relative_to(root).as_posix()
            entries.append(StepEntry(str(sid or folder_id), d, root, data, error))
        cache.save()
    entries.sort(key=lambda e: e.id)
    return entries


def resolve(step_id: str, entries: list[StepEntry]) -> StepEntry:
    """Exact id, else a unique tail (`rlvr`, `nemo_rl/rlvr`); otherwise a did-you-mean, exit 2."""
    query = step_id.strip("/")
    for e in entries:
        if e.id == query:
            return e
    tails = [e for e in entries if e.id.endswith("/" + query)]
    if len(tails) == 1:
        return tails[0]
    from catalog.errors import StepsError  # only on failure: `show` stays light

    if len(tails) > 1:
        names = ", ".join(e.id for e in tails)
        raise StepsError(
            "E-STEP-AMBIGUOUS",
            f"step id '{step_id}' matches several steps: {names}",
            fix="use the full id",
            exit_code=2,
        )
    from catalog.did_you_mean import close_matches, phrase

    ids = [e.id for e in entries]
    near = close_matches(query, ids + [i.rsplit("/", 1)[-1] for i in ids])  # a tail names its id
    full = dict.fromkeys(
        c if c in ids else next(i for i in ids if i.endswith("/" + c)) for c in near
    )
    hint = phrase(list(full), otherwise="run `python -m steps list`")
    doing = _doing(query, entries)
    if doing:  # an algorithm or tag (`grpo`): the steps that do it
        hint = f"did you mean {' or '.join(doing)}? (steps for {query})"
    raise StepsError("E-STEP-UNKNOWN", f"unknown step '{step_id}'", fix=hint, exit_code=2)


def _doing(word: str, entries: list[StepEntry]) -> list[str]:
    """Steps whose run.algorithm or a tag is `word` (any case)."""
    word = word.lower()
    out = []
    for e in entries:
        run, tags = e.data.get("run"), e.meta.get("tags")
        algo = str(run.get("algorithm", "")) if isinstance(run, dict) else ""
        named = [str(t).lower() for t in tags] if isinstance(tags, list) else []
        if algo.lower() == word or word in named:
            out.append(e.id)
    return out
