"""Hand the process over to NeMo-RL: find the checkout, pick the script, build argv, exec.

What runs is what was validated: the upstream script gets `--config <run dir>/config.yaml` and
no further overrides, from the checkout root, through `uv run` when the checkout has `uv.lock`
and uv is on PATH (NeMo-RL's workers rebuild their venvs from it), else the current Python.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from catalog.errors import StepsError
from catalog.upstream import NEMO_RL_CONTAINER_PATH, NEMO_RL_HOME_VAR

NOT_FOUND_FIX = (
    f"pass --nemo-rl DIR (a NeMo-RL checkout), set {NEMO_RL_HOME_VAR}, or run inside the NeMo-RL "
    f"container where the checkout is {NEMO_RL_CONTAINER_PATH}"
)


def choose_script(run_spec: Any, config: Mapping) -> str:
    """`[run].gym_script` when `env.should_use_nemo_gym` is true, else `[run].script`."""
    env = config.get("env") if isinstance(config, Mapping) else None
    gym = isinstance(env, Mapping) and env.get("should_use_nemo_gym") is True
    script = run_spec.gym_script if gym and run_spec.gym_script else run_spec.script
    if not script:
        raise StepsError(
            "E-MANIFEST-RUN",
            "the step's [run] names no script for this config"
            + (" (env.should_use_nemo_gym is true but [run].gym_script is unset)" if gym else ""),
            fix="set [run].script (and [run].gym_script for NeMo-Gym configs) in step.toml",
            exit_code=2,
        )
    return script


def candidates(explicit: str | Path | None, env: Mapping[str, str]) -> list[tuple[str, Path]]:
    """Where to look, in order: `--nemo-rl DIR`, `$NEMO_RL_HOME`, the container path."""
    out: list[tuple[str, Path]] = []
    if explicit:
        out.append(("--nemo-rl", Path(explicit).expanduser()))
    if env.get(NEMO_RL_HOME_VAR):
        out.append((f"${NEMO_RL_HOME_VAR}", Path(env[NEMO_RL_HOME_VAR]).expanduser()))
    out.append(("container path", Path(NEMO_RL_CONTAINER_PATH)))
    return out


def locate(script: str, explicit: str | Path | None, env: Mapping[str, str]) -> Path | None:
    """The first candidate holding the script; an explicit `--nemo-rl` is the only one tried."""
    found = candidates(explicit, env)
    if explicit:
        found = found[:1]
    for _, path in found:
        if (path / script).is_file():
            return path.resolve()
    return None


def not_found(script: str, explicit: str | Path | None, env: Mapping[str, str]) -> StepsError:
    tried = candidates(explicit, env)
    if explicit:
        tried = tried[:1]
    where = "; ".join(f"{label} {p} (no {script})" for label, p in tried)
    return StepsError(
        "E-NEMO-RL-NOT-FOUND",
        f"no NeMo-RL checkout found to run {script}: tried {where}",
        fix=NOT_FOUND_FIX,
        exit_code=2,
    )


def build_command(
    checkout: Path, script: str, config_path: Path, env: Mapping[str, str]
) -> list[str]:
    """`uv run python <script> --config <path>` or `<python> <script> --config <path>`."""
    uv = shutil.which("uv", path=env.get("PATH", os.defpath))
    if (checkout / "uv.lock").is_file() and uv:
        return ["uv", "run", "python", script, "--config", str(config_path)]
    return [sys.executable, script, "--config", str(config_path)]


def exec_env(checkout: Path, env: Mapping[str, str], extra: Mapping[str, str] = {}) -> dict:
    """The environment NeMo-RL gets: ours plus `PYTHONPATH=<checkout>` in front."""
    out = dict(env)
    out.update(extra)
    old = out.get("PYTHONPATH")
    out["PYTHONPATH"] = str(checkout) + (os.pathsep + old if old else "")
    return out


def exec_command(argv: list[str], cwd: Path, env: Mapping[str, str]) -> None:
    """Replace this process with argv (no shell); only returns by raising."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.chdir(cwd)
        os.execvpe(argv[0], argv, dict(env))
    except OSError as exc:
        raise StepsError(
            "E-EXEC",
            f"cannot start {argv[0]} in {cwd}: {exc.strerror or exc}",
            fix="check that the program is installed and on PATH",
            exit_code=2,
        ) from None
