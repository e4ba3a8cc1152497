"""Find steps: the built-in `steps/` tree plus extra roots (`--catalog DIR`, `$STEPS_PATH`).

Reads raw TOML only (no pydantic) so `python -m steps list` stays as fast as Python start-up;
`catalog.manifest` validates the same data for `check` and `run`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from catalog.errors import StepsError
from catalog.tomlfile import load_toml

BUILTIN_ROOT = Path(__file__).resolve().parent.parent / "steps"
STEPS_PATH_VAR = "STEPS_PATH"
MANIFEST = "step.toml"
_SKIP_DIRS = {"__pycache__", "config", "data", "cli", "patterns", ".git"}


@dataclass(frozen=True)
class StepEntry:
    """A step folder and its raw manifest."""

    id: str
    dir: Path
    root: Path
    data: dict = field(repr=False)

    @property
    def manifest_path(self) -> Path:
        return self.dir / MANIFEST

    @property
    def folder_id(self) -> str:
        return self.dir.relative_to(self.root).as_posix()

    @property
    def meta(self) -> dict:
        return self.data.get("step", {})

    @property
    def category(self) -> str:
        return self.meta.get("category", "")

    @property
    def consumes(self) -> list[dict]:
        return self.data.get("consumes", [])

    @property
    def produces(self) -> list[dict]:
        return self.data.get("produces", [])

    @property
    def config_dir(self) -> Path:
        return self.dir / "config"

    def config_names(self) -> list[str]:
        if not self.config_dir.is_dir():
            return []
        return sorted(p.stem for p in self.config_dir.glob("*.yaml"))

    def config_path(self, name: str) -> Path:
        return self.config_dir / f"{name}.yaml"


def catalog_roots(extra: Iterable[str | Path] = ()) -> list[Path]:
    """Built-in root first, then `--catalog` dirs, then `$STEPS_PATH` entries."""
    roots = [BUILTIN_ROOT]
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
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        if MANIFEST in filenames:
            yield Path(dirpath)


def discover(extra_roots: Iterable[str | Path] = (), strict: bool = True) -> list[StepEntry]:
    """Every step under every root, sorted by id. A root that is not a directory is an error."""
    entries: list[StepEntry] = []
    for root in catalog_roots(extra_roots):
        if not root.is_dir():
            raise StepsError(
                "E-CATALOG-ROOT",
                "catalog root is not a directory",
                path=str(root),
                fix=f"pass an existing folder to --catalog or fix ${STEPS_PATH_VAR}",
                exit_code=2,
            )
        for d in _manifest_dirs(root):
            try:
                data = load_toml(d / MANIFEST, code="E-MANIFEST-TOML")
            except StepsError:
                if strict:
                    raise
                data = {}
            step_id = data.get("step", {}).get("id") or d.relative_to(root).as_posix()
            entries.append(StepEntry(id=str(step_id), dir=d, root=root, data=data))
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
    if len(tails) > 1:
        names = ", ".join(e.id for e in tails)
        raise StepsError(
            "E-STEP-AMBIGUOUS",
            f"step id '{step_id}' matches several steps: {names}",
            fix="use the full id",
            exit_code=2,
        )
    import difflib

    ids = [e.id for e in entries]
    pool = ids + [i.rsplit("/", 1)[-1] for i in ids]
    close = difflib.get_close_matches(query, pool, n=3, cutoff=0.5)
    full = []
    for c in close:
        match = c if c in ids else next(i for i in ids if i.endswith("/" + c))
        if match not in full:
            full.append(match)
    hint = f"did you mean {' or '.join(full)}?" if full else "run `python -m steps list`"
    raise StepsError("E-STEP-UNKNOWN", f"unknown step '{step_id}'", fix=hint, exit_code=2)
