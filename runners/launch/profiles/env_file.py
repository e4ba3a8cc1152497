"""Which env.toml a command reads: `--env-file PATH`, else `$STEPS_ENV_FILE`, else `env.toml` in
the current directory or a parent (only when yours alone), else `$XDG_CONFIG_HOME/steps/env.toml`.
"""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path

from catalog.errors import StepsError

ENV_FILE_VAR = "STEPS_ENV_FILE"
ENV_FILE_NAME = "env.toml"


def find_env_file(explicit: str | None, env: Mapping[str, str], cwd: Path) -> Path:
    """The env.toml to read, in the documented order; E-PROFILE (exit 2) when there is none."""
    if explicit:
        path = (cwd / Path(explicit).expanduser()).resolve()
        if path.is_file():
            return path
        raise _missing(f"--env-file {explicit}: no such file")
    if env.get(ENV_FILE_VAR):
        path = Path(env[ENV_FILE_VAR]).expanduser()
        if path.is_file():
            return path
        raise _missing(f"${ENV_FILE_VAR}={path}: no such file")
    for folder in (cwd, *cwd.parents):
        if (folder / ENV_FILE_NAME).is_file():
            return trusted(folder / ENV_FILE_NAME, cwd)
    config_home = Path(env.get("XDG_CONFIG_HOME") or Path(env.get("HOME", "~")) / ".config")
    user = config_home.expanduser() / "steps" / ENV_FILE_NAME
    if user.is_file():
        return user
    raise StepsError(
        "E-PROFILE",
        f"no env.toml found (tried {ENV_FILE_NAME} in {cwd} and its parents; {user})",
        fix="write an env.toml with your cluster profile (see docs/cluster.md) "
        f"or pass --env-file PATH / set ${ENV_FILE_VAR}",
        exit_code=2,
    )


def trusted(path: Path, cwd: Path) -> Path:
    """`path` (found walking up from `cwd`) when no one else can write it or its folder, as ssh
    treats its config: a profile chooses ssh commands. E-PROFILE else."""
    uid = os.getuid()
    for what, item in (("", path), ("its folder ", path.parent)):
        st = item.stat()
        owners = (uid,) if not what else (uid, 0)  # root can change anything you run anyway
        if st.st_uid not in owners:
            problem = f"{what}is owned by uid {st.st_uid}, not by you (uid {uid})"
        elif st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            problem = f"{what}is writable by {'group' if st.st_mode & stat.S_IWGRP else 'others'}"
        else:
            continue
        where = "the current directory" if path.parent == cwd else f"a parent of {cwd}"
        chmod = f"chmod go-w {shlex.quote(str(item))}"
        raise StepsError(
            "E-PROFILE",
            f"not using {path} (found in {where}): it {problem}; an env.toml found by walking "
            "up is used only when it is yours and no one else can write it",
            path=str(path),
            fix=f"if you trust it, pass --env-file {shlex.quote(str(path))}; if it is yours, "
            + (chmod if "writable" in problem else f"chown {uid} {shlex.quote(str(item))}")
            + "; else put your own env.toml in your project",
            exit_code=2,
        )
    return path


def _missing(msg: str) -> StepsError:
    return StepsError("E-PROFILE", msg, fix="correct env.toml (see docs/cluster.md)", exit_code=2)
