"""Nemotron's and nemo-run's env.toml keys, read as ours (docs/cluster.md, "Profiles").

`${oc.env:NAME[,default]}` is resolved from the submitting environment, as Nemotron does. An
`env_vars` entry `NAME = "${oc.env:NAME}"` forwards NAME as a secret (`${oc.env:NAME,''}`: when
set here); a secret-named variable with any other value is refused.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Literal

from runners.secrets import is_secret_env

Mode = Literal["run", "batch"] | None
Problem = tuple[str, str, str]  # (key to point at, message, fix)

# Top-level tables of a Nemotron env.toml that are settings, not profiles.
RESERVED = ("wandb", "cli", "cache", "artifacts")
# Values printed and put on command lines as they are: one read from a secret is refused.
SECRET_FREE = ("host", "address")
_OC_ENV = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,([^}]*))?\}")
_SBATCH = {"cpus_per_task": "--cpus-per-task", "mem": "--mem"}


def _resolve(value: Any, env: Mapping[str, str], key: str, out: list[Problem]) -> Any:
    """`value` with every `${oc.env:NAME[,default]}` replaced from `env`."""
    if isinstance(value, dict):
        return {k: _resolve(v, env, str(k), out) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, env, key, out) for v in value]
    if not isinstance(value, str):
        return value

    def one(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        if key in SECRET_FREE and is_secret_env(name):
            out.append(
                (
                    key,
                    f"{key} = {m.group()}: ${name} is a secret, and a {key} is printed in "
                    "messages and put on ssh's command line",
                    f"write the {key} itself in "
                    "env.toml (a secret belongs in env_vars or secrets, passed by name)",
                )
            )
            return ""  # fmt: skip
        if name in env:
            return env[name]
        if default is not None:
            return default.strip().strip("'\"")
        out.append((key, f"{key} = {m.group()}: ${name} is not set here", f"export {name}=..."))
        return ""

    return _OC_ENV.sub(one, value)


def _env_vars(table: Any, p: dict, environ: Mapping[str, str], out: list[Problem]) -> None:
    """`env_vars` into `env` (plain values) and `secrets` (names forwarded from here)."""
    if not isinstance(table, dict):
        out.append(("env_vars", "env_vars must be a table NAME = value", "env_vars = { A = 'x' }"))
        return
    env, secrets = dict(p.get("env") or {}), list(p.get("secrets") or [])  # ours win
    for name, value in table.items():
        if value == "${oc.env:" + str(name) + "}":
            secrets += [name] if name not in secrets else []
        elif _optional_forward(str(name), value):  # Nemotron's generated `${oc.env:NAME,''}`
            if environ.get(str(name)) and name not in secrets:
                secrets.append(name)  # forwarded when set here; unset means empty, as there
        elif is_secret_env(str(name)):
            out.append(
                (
                    str(name),
                    f"env_vars.{name} holds a value, and {name} is a secret: a value in env.toml "
                    "is written into the job's files and logs",
                    f'remove it from env_vars and list its NAME: secrets = ["{name}"] (steps '
                    "forwards it from your environment at submit time, never writing it)",
                )
            )
        else:
            env.setdefault(str(name), str(_resolve(value, environ, str(name), out)))
    p["env"], p["secrets"] = env, secrets


def _optional_forward(name: str, value: Any) -> bool:
    """`${oc.env:NAME,''}` (an empty default) for NAME itself: forward it if set, else none."""
    m = _OC_ENV.fullmatch(value) if isinstance(value, str) else None
    return bool(m and m.group(1) == name and m.group(2) is not None
                and m.group(2).strip().strip("'\"") == "")  # fmt: skip


def _ssh(p: dict, out: list[Problem]) -> None:
    """`tunnel`/`user`/`identity` (nemo-run's SSHTunnel) into `host` (`user@host`) and
    `ssh_options` (`-i IDENTITY`); without `host` the job is submitted from this machine."""
    tunnel = p.pop("tunnel", None)
    user, identity = p.pop("user", None), p.pop("identity", None)
    if tunnel not in (None, "ssh", "local"):
        out.append(
            (
                "tunnel",
                f"tunnel = {tunnel!r}: steps submits over ssh or here",
                'tunnel = "ssh" with host, or no tunnel and no host (this machine)',
            )
        )
    if tunnel == "local" and p.get("host"):
        out.append(("tunnel", 'tunnel = "local" with a host', 'remove host (or tunnel = "ssh")'))
    host = p.get("host")
    if not host:  # no host: steps submits from this machine (a login node); ssh is unused
        return
    if user and "@" not in str(host):
        p["host"] = f"{user}@{host}"
    if identity:
        p["ssh_options"] = [*(p.get("ssh_options") or []), "-i", os.path.expanduser(identity)]


def _tasks(p: dict, out: list[Problem]) -> None:
    """`ntasks_per_node`: ray.sub starts one task per node and NeMo-RL one worker per GPU, which
    is what Nemotron's default (= gpus_per_node) means; any other count does not map."""
    n = p.pop("ntasks_per_node", None)
    if n is not None and n not in (1, p.get("gpus_per_node")):
        out.append(
            (
                "ntasks_per_node",
                f"ntasks_per_node = {n}: ray.sub starts one task per node and NeMo-RL one "
                "worker per GPU (gpus_per_node); another count does not map",
                "remove ntasks_per_node (set gpus_per_node for the GPUs per node)",
            )
        )


def _sbatch(p: dict) -> None:
    """`cpus_per_task`, `mem`, `exclusive` into sbatch_args."""
    args = list(p.get("sbatch_args") or [])
    for key, flag in _SBATCH.items():
        if key in p:
            args.append(f"{flag}={p.pop(key)}")
    if p.pop("exclusive", False) is True:
        args.append("--exclusive")
    p["sbatch_args"] = args


def _renamed(p: dict, mode: Mode) -> None:
    """Keys that are ours under another name."""
    run, batch = p.pop("run_partition", None), p.pop("batch_partition", None)
    chosen = {"run": run, "batch": batch}.get(mode or "") or (None if mode else batch or run)
    if chosen:
        p["partition"] = chosen
    for old in ("remote_job_dir", "job_dir"):
        if old in p:
            p.setdefault("remote_dir", p.pop(old))
    startup = p.pop("startup_commands", None)
    if startup and "setup_command" not in p:
        p["setup_command"] = "\n".join(startup) if isinstance(startup, list) else str(startup)


def translate(
    profile: dict, env: Mapping[str, str], mode: Mode = None
) -> tuple[dict, list[Problem]]:
    """(the profile in our keys, what does not map) for one merged profile; `mode` picks
    `run_partition` (--run) or `batch_partition` (--batch)."""
    out: list[Problem] = []
    raw_vars = profile.get("env_vars")
    p = _resolve({k: v for k, v in profile.items() if k != "env_vars"}, env, "", out)
    if raw_vars is not None:
        _env_vars(raw_vars, p, env, out)
    _ssh(p, out)
    _tasks(p, out)
    from runners.launch.backends import find

    backend = find(p.get("executor"))
    if backend is not None and "sbatch" in backend.has:
        _sbatch(p)
    _renamed(p, mode)
    return p, out
