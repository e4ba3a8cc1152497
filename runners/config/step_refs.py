"""A `defaults:` entry that names a shipped step config instead of a file path.

NeMo-RL's `load_config` reads every `defaults:` entry as a path relative to the declaring file,
and that meaning always wins: a file of that name beside the declaring file is the parent. Only
when there is no such file, an entry is read as a step config:
- `STEP:CONFIG` (`rl/nemo_rl/rlvr:tiny`, `rlvr:nemo_gym`, `dpo:default.yaml`): that step's config;
- `CONFIG` (`tiny`, `default.yaml`): the config of the step being run (`home`, its config/ folder).
The run dir's config.yaml holds the merged result, so NeMo-RL never sees these names.
"""

from __future__ import annotations

from pathlib import Path

from catalog.errors import StepsError


def _config_name(name: str) -> str:
    return name[: -len(".yaml")] if name.endswith(".yaml") else name


def step_config(entry: str, home: Path | None) -> Path | None:
    """The shipped config `entry` names, or None when it names none (the caller then reports the
    path as NeMo-RL would). Raises E-CONFIG-DEFAULTS for a `STEP:CONFIG` whose step is known
    but has no such config, naming the configs it has."""
    step, sep, name = entry.rpartition(":")
    if not sep:
        if home is None or "/" in entry:
            return None
        path = home / f"{_config_name(entry)}.yaml"
        return path if path.is_file() else None
    if not step or not name or "/" in name:
        return None
    from catalog.discovery import discover, resolve

    try:
        found = resolve(step, discover())
    except StepsError:
        return None
    path = found.config_path(_config_name(name))
    if path.is_file():
        return path
    names = ", ".join(f"{found.id}:{n}" for n in found.config_names()) or "none"
    raise StepsError(
        "E-CONFIG-DEFAULTS",
        f"step {found.id} has no config '{_config_name(name)}' (`defaults: {entry}`)",
        path=str(found.config_dir),
        fix=f"use one of: {names}",
        exit_code=2,
    )
