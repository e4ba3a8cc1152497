"""env.toml launch profiles: where a run goes (this machine, a Slurm cluster, a Ray cluster).

Each top-level table is a profile, but Nemotron's settings tables (RESERVED); Nemotron's and
nemo-run's keys are read as ours (`aliases`). `extends = "other"` inherits a profile: tables
merge key by key, APPENDED lists append (parent first), other values are replaced. Every problem
of a profile is reported in one E-PROFILE (exit 2), each at its file and line. Secrets are NAMES
of variables forwarded from the submitting environment, never values.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from catalog.did_you_mean import close_matches
from catalog.errors import Finding, StepsError
from catalog.model_errors import file_lines, findings_from
from catalog.tomlfile import load_toml
from runners.launch.profiles.aliases import RESERVED, Mode, translate
from runners.launch.profiles.env_file import find_env_file
from runners.launch.profiles.values import (
    PROFILE_VALUE,
    AbsDir,
    Host,
    Mounts,
    Name,
    SbatchArgs,
    SlurmTime,
    no_control,
)

APPENDED = ("mounts", "secrets", "shared_dirs")
DEFAULT_LAUNCHER = "uv run python"
_EXAMPLES = {
    "remote_dir": 'remote_dir = "/shared/you/steps" (a folder every node sees; Nemotron\'s '
    "remote_job_dir is read as it)",
    "address": 'address = "http://HEAD:8265" (the Ray dashboard)',
}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

EnvName = Annotated[str, Field(pattern=_ENV_NAME.pattern)]


class _Profile(BaseModel):
    # Only the executor's own model is built, when first used (pydantic builds eagerly else).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    extends: str | None = Field(None, description="Profile to inherit from.")
    env: dict[EnvName, str] = Field({}, description="Plain environment values for the job.")
    secrets: list[EnvName] = Field(
        [], description="NAMES of variables forwarded from the submitting environment."
    )
    nemo_rl_dir: Name | None = Field(None, description="The NeMo-RL checkout as the job sees it.")
    nemo_rl_version: str | None = Field(None, description="NeMo-RL version on the cluster.")
    launcher: str = Field(DEFAULT_LAUNCHER, description="Runs NeMo-RL's example script.")

    @field_validator("*")
    @classmethod
    def _no_control(cls, value: Any, info: ValidationInfo) -> Any:
        """No value holds a control character (values.py says why)."""
        return no_control(value, info.field_name or "")


class LocalProfile(_Profile):
    """`executor = "local"`: exec on this machine (today's `run`)."""

    executor: Literal["local"]
    launcher: str | None = Field(  # type: ignore[assignment]
        None,
        description="Starts NeMo-RL's script here (default: `uv run python` when the checkout "
        "has uv.lock and uv is on PATH, else the Python running steps).",
    )


class SlurmProfile(_Profile):
    """`executor = "slurm"`: sbatch NeMo-RL's own ray.sub (or a plain srun job)."""

    executor: Literal["slurm"]
    host: Host | None = Field(None, description="Submit over ssh to this host (ssh config name).")
    ssh_options: list[str] = Field([], description="Extra ssh arguments (-p, -i, -F, -o ...).")
    account: Name | None = None
    partition: Name | None = None
    time: SlurmTime = Field("01:00:00", description="Wall-time limit passed to sbatch --time.")
    nodes: int | None = Field(None, ge=1, description="Must agree with what the config needs.")
    gpus_per_node: int | None = Field(None, ge=0, description="sbatch --gres=gpu:N.")
    container_image: Name | None = Field(None, description="pyxis image or .sqsh path.")
    mounts: Mounts = Field([], description='Container mounts, "src:dst[:ro]".')
    remote_dir: AbsDir = Field(description="Shared-filesystem folder for run dirs and logs.")
    sbatch_args: SbatchArgs = Field([], description="Extra sbatch flags (not those steps sets).")
    setup_command: str | None = Field(None, description="ray.sub SETUP_COMMAND (every node).")
    steps_launcher: str = Field(
        "",
        description="How a data-prep job starts `steps` where it runs; empty: the copy staged "
        "with the run dir, run by the container's python3 (`python3 JOB_DIR/code`).",
    )
    save_margin: SlurmTime = Field(
        "00:15:00",
        description="Chains: time kept at a segment's end for start-up and one save (Slurm "
        "time format); checkpoint_must_save_by = time - save_margin.",
    )


class RayProfile(_Profile):
    """`executor = "ray"`: Ray's Job Submission API on an existing cluster."""

    executor: Literal["ray"]
    address: str = Field(description="Dashboard URL, e.g. http://127.0.0.1:8265.")
    remote_dir: AbsDir | None = Field(
        None, description="Shared storage mounted here and on the cluster; else upload the run dir."
    )
    shared_dirs: list[AbsDir] = Field(
        [], description="More folders every node of the cluster sees (data, outputs, caches)."
    )
    entrypoint_num_cpus: float | None = Field(None, ge=0)
    entrypoint_num_gpus: float | None = Field(None, ge=0)
    entrypoint_resources: dict[str, float] = {}
    steps_launcher: str = ""  # empty: the copy staged with the run dir (see SlurmProfile)

    def shared(self) -> list[str]:
        """The folders the cluster sees: remote_dir and shared_dirs."""
        return list(
            dict.fromkeys([*([self.remote_dir] if self.remote_dir else []), *self.shared_dirs])
        )


Profile = LocalProfile | SlurmProfile | RayProfile


def model_for(executor: Any) -> type[BaseModel] | None:
    """The profile model of `executor` (local's, else its backend's); None when none."""
    from runners.launch.backends import find

    backend = find(executor) if isinstance(executor, str) else None
    local = {"local": LocalProfile}.get(executor) if isinstance(executor, str) else None
    return local or (backend.profile_model if backend is not None else None)


_FIELDS = {
    name for model in (LocalProfile, SlurmProfile, RayProfile) for name in model.model_fields
}


def load_profile(
    path: Path, name: str, env: Mapping[str, str] | None = None, mode: Mode = None
) -> LocalProfile | SlurmProfile | RayProfile:
    """Profile `name` from `path`, its `extends` merged, Nemotron's keys read as ours
    (`${oc.env:...}` from `env`) and validated: every problem in one error."""
    data = load_toml(path, code="E-PROFILE")
    for key, value in data.items():
        if not isinstance(value, dict):
            raise _error(
                f"top-level key '{key}' is not a profile table", path, profile_line(path, key)
            )
    if name in RESERVED:
        raise _error(
            f"[{name}] is a settings table (W&B, Nemotron's CLI), not a profile", path,
            profile_line(path, name), f"use one of: {', '.join(_profiles(data)) or 'none'}",
        )  # fmt: skip
    merged = _merged(data, name, path, [])
    executor = merged.get("executor")
    model = model_for(executor)
    if model is None:
        from runners.launch.backends import known

        names = ["local", *known()]
        msg = f"executor {executor!r} is not one of {', '.join(names)}"
        if executor is None:
            msg = "has no `executor`"
        line = profile_line(path, "executor", name) if executor is not None else None
        fix = "set executor = " + " or ".join(f'"{n}"' for n in names)
        raise _error(f"profile [{name}] {msg}", path, line or profile_line(path, name), fix)
    merged, unmapped = translate(merged, os.environ if env is None else env, mode)
    found = [
        Finding("E-PROFILE", f"profile [{name}] {msg}", path=str(path),
                line=profile_line(path, key, name), fix=fix, key=key)
        for key, msg, fix in unmapped
    ]  # fmt: skip
    try:
        profile = model.model_validate(merged)
    except ValidationError as exc:
        found += findings_from(
            exc,
            code="E-PROFILE",
            path=path,
            data=merged,
            locate=lambda loc: _line(path, loc, name),
            message=lambda err, loc: _problem(err, loc, name),
        )
    if found:
        raise _all_at_once(found, name)
    return profile  # type: ignore[return-value]  # a third backend's model is its own


def _profiles(data: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in data if k not in RESERVED)


def _line(path: Path, loc: tuple, name: str) -> int | None:
    """The line of the profile key an error is under (a missing key's: the header)."""
    key = next((str(p) for p in loc if p in _FIELDS), str(loc[-1]) if loc else name)
    return profile_line(path, key, name) or profile_line(path, name)


def _all_at_once(found: list[Finding], name: str) -> StepsError:
    """One E-PROFILE naming every problem at its line: one edit fixes the file, not N retries."""
    found = sorted(found, key=lambda f: f.line or 0)
    first = found[0]
    if len(found) > 1:
        listed = "\n".join(f"  {f.render(indent='  ').lstrip()}" for f in found)
        first = Finding(
            "E-PROFILE", f"profile [{name}] has {len(found)} problems:\n{listed}",
            path=first.path, line=first.line, fix="fix each one above (docs/cluster.md, "
            "\"Profiles (env.toml)\", maps Nemotron's keys to ours)",
        )  # fmt: skip
    return StepsError(
        first.code, first.message, path=first.path, line=first.line, fix=first.fix,
        key=first.key, exit_code=2,
    )  # fmt: skip


def _problem(err: Any, loc: tuple, name: str) -> tuple[str, str]:
    """(message, fix) for one profile error."""
    where = ".".join(map(str, loc))
    if err["type"] == "extra_forbidden":
        near = close_matches(str(loc[-1]), sorted(_FIELDS), n=1)
        msg = f"unknown key '{loc[-1]}'" + (f" (did you mean '{near[0]}'?)" if near else "")
        return (
            f"profile [{name}] {msg}",
            "remove or rename it; the keys are listed in docs/cluster.md",
        )
    if err["type"] == PROFILE_VALUE:
        return f"profile [{name}] {where}: {err['ctx']['message']}", err["ctx"]["fix"]
    if err["type"] == "missing":
        example = _EXAMPLES.get(where, f"{where} = ...")
        return f"profile [{name}] needs `{where}`", f"add {example}"
    return f"profile [{name}] {where}: {err['msg']}", f"set {where} to a valid value"


def _merged(data: dict, name: str, path: Path, chain: list[str]) -> dict:
    if name not in data:
        near = close_matches(name, _profiles(data), n=1)
        known = ", ".join(_profiles(data)) or "none"
        where = f" (extended by [{chain[-1]}])" if chain else ""
        raise StepsError(
            "E-PROFILE",
            f"no profile [{name}] in {path}{where}"
            + (f"; did you mean [{near[0]}]?" if near else ""),
            path=str(path),
            fix=f"use one of: {known}",
            exit_code=2,
        )
    if name in chain:
        cycle = " -> ".join([*chain[chain.index(name) :], name])
        raise _error(f"extends cycle: {cycle}", path, profile_line(path, "extends", name))
    own = dict(data[name])
    parent_name = own.get("extends")
    if parent_name is None:
        return own
    if not isinstance(parent_name, str):
        raise _error(
            f"[{name}] extends must be a profile name", path, profile_line(path, "extends", name)
        )
    parent = _merged(data, parent_name, path, [*chain, name])
    return merge_profiles(parent, own)


def merge_profiles(parent: Mapping[str, Any], child: Mapping[str, Any]) -> dict:
    """Tables merge, `mounts`/`secrets` append (no duplicates), other values replace."""
    out = dict(parent)
    for key, value in child.items():
        old = out.get(key)
        if key in APPENDED and isinstance(old, list) and isinstance(value, list):
            out[key] = [*old, *(v for v in value if v not in old)]
        elif isinstance(old, dict) and isinstance(value, dict):
            out[key] = merge_profiles(old, value)
        else:
            out[key] = value
    return out


def profile_line(path: Path, key: str, table: str | None = None) -> int | None:
    """Line of `key` inside `[table]` at any depth (no table: of `[key]`); an inherited key's:
    the first line setting it."""
    lines = file_lines(path)
    if table is None:
        return lines.get((key,))
    at = [(p[0] != table, n) for p, n in lines.items() if len(p) > 1 and p[-1] == key]
    return min(at)[1] if at else None


def _error(msg: str, path: Path | None, line: int | None, fix: str | None = None) -> StepsError:
    return StepsError(
        "E-PROFILE",
        msg,
        path=str(path) if path else None,
        line=line,
        fix=fix or "correct env.toml (see docs/cluster.md)",
        exit_code=2,
    )


def resolve_profile(
    name: str,
    explicit_file: str | None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    mode: Mode = None,
) -> tuple[str, Path, LocalProfile | SlurmProfile | RayProfile]:
    """(name, env file, profile) for `--run/--batch NAME` (`mode`: which of the two)."""
    env = os.environ if env is None else env
    path = find_env_file(explicit_file, env, cwd or Path.cwd())
    return name, path, load_profile(path, name, env, mode)
