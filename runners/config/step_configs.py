"""Shipped step configs named `STEP:CONFIG`: a `defaults:` parent, or brought into the user's
project (`cp` copies one whole, as torchtune's `tune cp`; `init` starts a file inheriting it).

NeMo-RL reads a `defaults:` entry as a path relative to the declaring file, and that meaning
always wins; only when no such file exists is it read as `STEP:CONFIG` (`rlvr:nemo_gym`,
`dpo:default.yaml`) or as a bare `CONFIG` of the step being run. The run dir's config.yaml holds
the merged result, so NeMo-RL never sees these names.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from catalog.atomic_write import write_atomic
from catalog.errors import StepsError

_DEFAULTS_LINE = re.compile(r"^defaults:[ \t]*([^\s#'\"]+)[ \t]*(#.*)?$", re.MULTILINE)


def step_config(entry: str, home: Path | None, declaring: Path, line: int | None) -> Path | None:
    """The shipped config a `defaults:` entry of `declaring` names, or None when it names none
    (the caller then reports the path as NeMo-RL would). E-CONFIG-DEFAULTS at the entry's line
    for a `STEP:CONFIG` whose step is known but has no such config, naming those it has."""
    step, sep, raw = entry.rpartition(":")
    name = raw.removesuffix(".yaml")
    if not sep:
        path = home / f"{name}.yaml" if home is not None and "/" not in entry else None
        return path if path is not None and path.is_file() else None
    if not step or not raw or "/" in raw:
        return None
    from catalog.discovery import discover, resolve

    try:
        found = resolve(step, discover())
    except StepsError:
        return None
    path = found.config_path(name)
    if path.is_file():
        return path
    names = ", ".join(f"{found.id}:{n}" for n in found.config_names()) or "none"
    raise StepsError(
        "E-CONFIG-DEFAULTS",
        f"step {found.id} has no config '{name}' (`defaults: {entry}`)",
        path=str(declaring),
        line=line,
        fix=f"use one of: {names}",
        exit_code=2,
    )


def shipped_config(ref: str) -> tuple[str, Path]:
    """`STEP[:CONFIG]` as (the step's full id, its config file); the step's default config when
    CONFIG is left out. E-STEP-UNKNOWN / E-CONFIG-NOT-FOUND (exit 2) otherwise."""
    from catalog.discovery import discover, resolve

    step, _, name = ref.partition(":")
    entry = resolve(step, discover())
    run = entry.data.get("run") if isinstance(entry.data.get("run"), dict) else {}
    name = name.removesuffix(".yaml") or str(run.get("default_config") or "default")
    return entry.id, entry.shipped_config(name)


def destination(dest: str | Path | None, source: Path, cwd: Path) -> Path:
    """DEST as a file: a folder (or nothing) takes the shipped file's name."""
    path = cwd / Path(dest).expanduser() if dest else cwd
    return path / source.name if path.is_dir() or str(dest or "").endswith("/") else path


def _refuse_existing(path: Path, force: bool) -> None:
    if path.exists() and not force:
        raise StepsError(
            "E-CONFIG-EXISTS",
            "the file exists; nothing was written",
            path=str(path),
            fix="pass --force to replace it, or name another DEST",
            exit_code=2,
        )


def copy_config(ref: str, dest: str | Path | None, cwd: Path, force: bool = False) -> Path:
    """Copy STEP:CONFIG to DEST, its `defaults:` parent renamed to the step's own
    (`defaults: default.yaml` -> `defaults: rl/nemo_rl/dpo:default`)."""
    step_id, source = shipped_config(ref)
    path = destination(dest, source, cwd)
    _refuse_existing(path, force)
    text = source.read_text(encoding="utf-8")

    def qualified(m: re.Match) -> str:
        name = m.group(1)
        if ":" in name or "/" in name:
            return m.group(0)
        comment = f"  {m.group(2)}" if m.group(2) else ""
        return f"defaults: {step_id}:{name.removesuffix('.yaml')}{comment}"

    text = _DEFAULTS_LINE.sub(qualified, text, count=1)
    header = f"# Copied from {step_id}:{source.stem} ({source.name}); edit freely.\n"
    write_atomic(path, header + text)
    return path


def init_config(ref: str, dest: str | Path | None, cwd: Path, force: bool = False) -> Path:
    """A new config at DEST that inherits STEP:CONFIG; the user adds only what differs."""
    step_id, source = shipped_config(ref)
    path = destination(dest, source, cwd)
    if path == cwd / source.name and dest is None:
        path = cwd / f"my_{source.name}"
    _refuse_existing(path, force)
    shown = os.path.relpath(path, cwd)
    text = (
        f"# Your settings on top of {step_id}:{source.stem} ({source}):\n"
        "# add only the keys that differ, nested as in that file.\n"
        f"# Check it: python -m steps run {step_id} -c {shown} --dry-run\n"
        f"defaults: {step_id}:{source.stem}\n"
    )
    write_atomic(path, text)
    return path
