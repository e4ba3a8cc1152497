"""Hand the process over to NeMo-RL: find the checkout, read its version, pick the script, exec.
What runs is what was validated: the script gets `--config <run dir>/config.yaml` only."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.errors import StepsError, cannot_start
from catalog.nemo_rl_version import (
    BRANCH,
    NemoRLVersion,
    parse_release,
    parse_version,
    pin_version,
    supported_text,
)
from catalog.upstream import (
    NEMO_RL_COMMIT,
    NEMO_RL_CONTAINER_PATH,
    NEMO_RL_HOME_VAR,
    NEMO_RL_OLDEST,
    NEMO_RL_RELEASES,
    NEMO_RL_SCRIPT_RENAMES,
)

NOT_FOUND_FIX = (
    f"pass --nemo-rl DIR (a NeMo-RL checkout), set {NEMO_RL_HOME_VAR}, or run inside the NeMo-RL "
    f"container where the checkout is {NEMO_RL_CONTAINER_PATH}"
)


def choose_script(run_spec: Any, config: Mapping, version: NemoRLVersion | None = None) -> str:
    """`[run].gym_script` when `env.should_use_nemo_gym` is true, else `[run].script`, under
    the name it had in `version` (`examples/run_grpo_math.py` before 0.5.0)."""
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
    return script_for_version(script, version)


def script_for_version(script: str, version: NemoRLVersion | None) -> str:
    for today, since, before in NEMO_RL_SCRIPT_RENAMES:
        parsed = parse_release(since)
        if script == today and version is not None and parsed and version.release < parsed[0]:
            return before
    return script


def candidates(explicit: str | Path | None, env: Mapping[str, str]) -> list[tuple[str, Path]]:
    """Where to look: `--nemo-rl DIR` alone when given, else `$NEMO_RL_HOME`, the container path."""
    if explicit:
        return [("--nemo-rl", Path(explicit).expanduser())]
    out: list[tuple[str, Path]] = []
    if env.get(NEMO_RL_HOME_VAR):
        out.append((f"${NEMO_RL_HOME_VAR}", Path(env[NEMO_RL_HOME_VAR]).expanduser()))
    out.append(("container path", Path(NEMO_RL_CONTAINER_PATH)))
    return out


def not_found(script: str, explicit: str | Path | None, env: Mapping[str, str]) -> StepsError:
    where = "; ".join(f"{label} {p} (no {script})" for label, p in candidates(explicit, env))
    return StepsError(
        "E-NEMO-RL-NOT-FOUND",
        f"no NeMo-RL checkout found to run {script}: tried {where}",
        fix=NOT_FOUND_FIX,
        exit_code=2,
    )


def exec_env(checkout: Path, env: Mapping[str, str], extra: Mapping[str, str] = {}) -> dict:
    """The environment NeMo-RL gets: ours plus `PYTHONPATH=<checkout>` in front."""
    out = {**env, **extra}
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
        raise cannot_start(argv[0], cwd, exc) from None


def is_checkout(path: Path) -> bool:
    """A NeMo-RL checkout holds the `nemo_rl` package or upstream's `examples/run_*.py`."""
    examples = path / "examples"
    return (path / "nemo_rl").is_dir() or (examples.is_dir() and any(examples.glob("run_*.py")))


def locate_checkout(explicit: str | Path | None, env: Mapping[str, str]) -> Path | None:
    """The first candidate that is a NeMo-RL checkout (it need not hold the step's script)."""
    for _, path in candidates(explicit, env):
        if path.is_dir() and is_checkout(path):
            return path.resolve()
    return None


def _git(checkout: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(
            ["git", "-C", str(checkout), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _git_describe(checkout: Path) -> tuple[str | None, int, str] | None:
    """(nearest release tag or None, commits since it, HEAD sha) of a git checkout."""
    if not (checkout / ".git").exists():  # not the folder of some enclosing repository
        return None
    out = _git(checkout, "describe", "--tags", "--long", "--always", "--abbrev=40", "--match=v*")
    if out is None or out.returncode != 0 or not out.stdout.strip():
        return None
    text = out.stdout.strip()
    parts = text.rsplit("-", 2)
    if len(parts) == 3 and parts[2].startswith("g") and parts[1].isdigit():
        return parts[0], int(parts[1]), parts[2][1:]
    return None, 0, text


def _descends_from_pin(checkout: Path, sha: str) -> bool:
    if sha == NEMO_RL_COMMIT:
        return True
    out = _git(checkout, "merge-base", "--is-ancestor", NEMO_RL_COMMIT, sha)
    return out is not None and out.returncode == 0


def _package_info(path: Path) -> str | None:
    """`nemo_rl/package_info.py`'s MAJOR.MINOR.PATCH + PRE_RELEASE, read with `ast`."""
    from catalog.package_info import package_info

    consts = package_info(path)
    if consts is None:
        return None
    if not all(isinstance(consts.get(k), int) for k in ("MAJOR", "MINOR", "PATCH")):
        return None
    pre = consts.get("PRE_RELEASE") if isinstance(consts.get("PRE_RELEASE"), str) else ""
    return f"{consts['MAJOR']}.{consts['MINOR']}.{consts['PATCH']}{pre}"


def _version_from_files(checkout: Path) -> tuple[str, str] | None:
    """(version text, file it came from): package_info.py, an egg-info, a static pyproject."""
    text = _package_info(checkout / "nemo_rl" / "package_info.py")
    if text:
        return text, "nemo_rl/package_info.py"
    for info in sorted(checkout.glob("*.egg-info/PKG-INFO")):
        for line in info.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip(), info.relative_to(checkout).as_posix()
    if (checkout / "pyproject.toml").is_file():
        from catalog.tomlfile import load_toml

        try:
            project = load_toml(checkout / "pyproject.toml").get("project", {})
        except StepsError:
            return None
        if isinstance(project.get("version"), str):
            return project["version"], "pyproject.toml"
    return None


def detect_version(checkout: Path | None, explicit: str | None = None) -> NemoRLVersion | None:
    """The NeMo-RL version that will run, read without importing it: `explicit` (a profile's
    `nemo_rl_version`), else the git tag, else descent from the pin, else what its files
    declare (on main package_info.py lags: the pin's says 0.6.0); None when nothing says."""
    if explicit:
        return parse_version(str(explicit), source="nemo_rl_version given", named=True)
    if checkout is None:
        return None
    files = _version_from_files(checkout)
    declared = parse_release(files[0]) if files else None
    git = _git_describe(checkout)
    if git is None:
        if declared is None:
            return None
        return NemoRLVersion(declared[0], declared[1], source=files[1])  # type: ignore[index]
    tag, distance, sha = git
    for number, commit in NEMO_RL_RELEASES.items():
        if sha == commit:
            return parse_version(number, source=f"git: the v{number} commit").at(sha)
    tagged = parse_release(tag) if tag else None
    if tagged and distance == 0:
        return NemoRLVersion(tagged[0], tagged[1], commit=sha, source=f"git tag {tag}")
    if _descends_from_pin(checkout, sha):
        return pin_version(sha, source="git: main at or after the pin")
    best = max((v for v in (tagged, declared) if v), key=lambda v: v[0], default=None)
    if best is None:
        return None
    where = f"git describe {tag}-{distance}" if best is tagged else files[1]  # type: ignore[index]
    return NemoRLVersion(best[0], best[1], BRANCH, sha, f"{where} (commit {sha[:8]})")


def unsupported(version: NemoRLVersion, checkout: Path | None) -> StepsError:
    at = f" at {checkout}" if checkout else ""
    return StepsError(
        "E-NEMO-RL-VERSION",
        f"NeMo-RL {version.label}{at} ({version.source}) is older than the oldest supported "
        f"version, {NEMO_RL_OLDEST}",
        fix=f"use a NeMo-RL checkout or container at {NEMO_RL_OLDEST} or newer "
        f"(supported: {supported_text()})",
        exit_code=2,
    )


@dataclass(frozen=True)
class Target:
    """The NeMo-RL a run is checked against: the located checkout (or None) and its version."""

    checkout: Path | None
    version: NemoRLVersion | None

    def with_script(self, script: str) -> Path | None:
        """The checkout, if it holds `script`."""
        if self.checkout is not None and (self.checkout / script).is_file():
            return self.checkout
        return None

    def describe(self, algorithm: str | None = None) -> str:
        """`0.7.0 (git tag v0.7.0); schema shipped for 0.7.0`, for --dry-run."""
        from runners.nemo_rl.schema.store import cached_schema_for

        head = "unknown (no version readable)"
        if self.version is not None:
            head = f"{self.version.label} ({self.version.source})"
        found = cached_schema_for(algorithm or "", self.checkout, self.version)
        return f"{head}; schema {found.origin}" if found else head


def resolve_target(
    explicit: str | Path | None, env: Mapping[str, str], version: str | None = None
) -> Target:
    """Locate the checkout and read its version; raise E-NEMO-RL-VERSION below the range."""
    checkout = locate_checkout(explicit, env)
    found = detect_version(checkout, version)
    if found is not None and not found.supported:
        raise unsupported(found, checkout)
    return Target(checkout, found)


def compile_for(
    target: Target,
    algorithm: str | None,
    path: Path,
    overrides: list[str],
    home: Path | None = None,
) -> Any:
    """The step config compiled for this NeMo-RL: its schema's overlays, then the overrides."""
    from runners.config.compile_once import compiled_once
    from runners.config.overlays import compile_with_overlays, overlay_candidates
    from runners.nemo_rl.schema.store import cached_schema_for

    def build() -> Any:
        found = cached_schema_for(algorithm or "", target.checkout, target.version)
        return compile_with_overlays(path, overrides, found.doc if found else None, home)[0]

    nemo_rl = (str(target.checkout), repr(target.version), algorithm)
    key = ("nemo_rl", str(path), str(home), tuple(overrides), nemo_rl)
    return compiled_once(key, path, build, lambda c: overlay_candidates(c.sources))
