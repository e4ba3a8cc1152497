"""Preflight for cluster launches (`--run/--batch PROFILE`): what would fail after queueing.

Each rule reads `ctx.remote` (the profile and one probe of the cluster). Sources: NeMo-RL's
ray.sub, docs/cluster.md, and launch failures users reported (research/remote-execution.md §5).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from catalog.errors import WARNING, Finding
from runners.launch.request import under
from runners.preflight import PreflightContext, rule
from runners.secrets import holds_secret, looks_like_secret

_OC_ENV = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)")


# The launch layer's profiles and backends (pydantic models) are imported inside the rules, which
# act only for a cluster profile: a local dry run pays nothing for them.


def _finding(ctx: PreflightContext, code: str, msg: str, key: str, fix: str, warn: bool = False):
    """A finding at a key of the profile in env.toml."""
    from runners.launch.profiles.env_toml import profile_line

    f = ctx.remote
    line = profile_line(Path(f.env_file), key, f.profile_name)
    sev = WARNING if warn else "error"
    return Finding(code, msg, path=f.env_file, line=line, fix=fix, severity=sev, key=key)


def _ray_sub(ctx: PreflightContext) -> bool:
    """The job is a Ray program started by NeMo-RL's ray.sub in the allocation."""
    return "ray_sub" in ctx.remote.has and ctx.remote.ray_program


def job_paths(ctx: PreflightContext) -> list[tuple[str, str]]:
    """(what, absolute path) for everything the job reads or writes on the cluster."""
    f = ctx.remote
    out = [(f"input {a.name} ({a.config_key})", a.value) for a in ctx.inputs if a.is_path]
    out += [(f"output {a.name} ({a.config_key})", a.value) for a in ctx.outputs if a.is_path]
    for key in ("checkpointing.checkpoint_dir", "logger.log_dir"):
        value = ctx.get(key)
        if isinstance(value, str) and value:
            out.append((key, value))
    if f.profile.env.get("HF_HOME"):
        out.append(("HF_HOME", f.profile.env["HF_HOME"]))
    out.append(("the run dir", f.job_dir))
    if f.profile.nemo_rl_dir:
        out.append(("nemo_rl_dir", f.profile.nemo_rl_dir))
    seen: set[str] = set()
    return [(w, p) for w, p in out if p and os.path.isabs(p) and not (p in seen or seen.add(p))]


@rule("remote_allocation", needs=(), on=("ray_sub",))
def remote_allocation(ctx: PreflightContext) -> Iterator[Finding]:
    """Profile nodes and GPUs agree with the config and with the partition's GRES."""
    at = partial(_finding, ctx)
    if not _ray_sub(ctx):
        return
    from runners.launch.slurm.backend import parse_gres_gpus
    from runners.launch.target import nodes_needed

    p = ctx.remote.profile
    need = nodes_needed(ctx.config, p.env)
    if p.nodes is not None and p.nodes != need:
        yield at(
            "E-REMOTE-NODES",
            f"profile nodes = {p.nodes} but the config needs {need} (cluster.num_nodes"
            " + env.nemo_gym.num_gpu_nodes when Gym runs + 1 with DEDICATED_RAY_HEAD=1)",
            "nodes",
            f"set nodes = {need} in the profile or change cluster.num_nodes",
        )
    gpus = ctx.get("cluster.gpus_per_node")
    if p.gpus_per_node is not None and isinstance(gpus, int) and p.gpus_per_node != gpus:
        yield at(
            "E-REMOTE-GPUS",
            f"profile gpus_per_node = {p.gpus_per_node} but cluster.gpus_per_node = {gpus}: "
            "NeMo-RL would wait for GPUs the job does not have",
            "gpus_per_node",
            f"make them equal (cluster.gpus_per_node={p.gpus_per_node} or gpus_per_node = {gpus})",
        )
    have = parse_gres_gpus(ctx.remote.gres or "")
    want = p.gpus_per_node if p.gpus_per_node is not None else gpus
    if have is not None and isinstance(want, int) and have != want:
        yield at(
            "E-REMOTE-GPUS",
            f"partition {p.partition or '(default)'} has GRES gpu:{have} per node but the job "
            f"asks for {want}: ray.sub exits 1 when GPUS_PER_NODE differs from the GRES count",
            "gpus_per_node",
            f"use {have} GPUs per node (cluster.gpus_per_node={have}) or another partition",
        )


@rule("remote_mounts", needs=(), on=("container_mounts",))
def remote_mounts(ctx: PreflightContext) -> Iterator[Finding]:
    """Every path the job touches is under a container mount; no mount of the whole home."""
    at = partial(_finding, ctx)
    f = ctx.remote
    p = f.profile
    if not p.container_image:
        if _ray_sub(ctx):
            yield at(
                "E-REMOTE-CONTAINER",
                "ray.sub runs every node in a pyxis container and aborts without CONTAINER",
                "container_image",
                'set container_image = "nvcr.io/nvidia/nemo-rl:<version>" (or a .sqsh path)',
            )
        return
    dests = [m.split(":")[1] if ":" in m else m for m in p.mounts]
    for what, path in job_paths(ctx):
        if not any(under(path, d) for d in dests):
            yield at(
                "E-REMOTE-MOUNT",
                f"{what} {path} is not under any container mount ({', '.join(dests) or 'none'}):"
                " the job cannot see it",
                "mounts",
                f'add a mount covering it, e.g. mounts = ["{os.path.dirname(path)}:'
                f'{os.path.dirname(path)}"]',
            )
    home = f.home
    for m in p.mounts:
        src = m.split(":")[0].rstrip("/")
        if home and src and (src == home.rstrip("/") or src in ("~", "$HOME")):
            yield at(
                "W-REMOTE-HOME-MOUNT",
                f"mount {m} exposes the whole home directory {home}: enroot caches and small "
                "home quotas have broken jobs this way (RL#1933)",
                "mounts",
                "mount a project folder on shared storage instead",
                warn=True,
            )


@rule("remote_nemo_rl", needs=("nemo_rl_config",), on=())
def remote_nemo_rl(ctx: PreflightContext) -> Iterator[Finding]:
    """The cluster's NeMo-RL checkout has ray.sub and the example script."""
    f = ctx.remote
    if not f.profile.nemo_rl_dir:
        return
    root = f.profile.nemo_rl_dir
    needed = [p for p in f.exists if p == root or p.startswith(root + "/")]
    missing = [p for p in needed if not f.exists[p]]
    if missing:
        where = f.host or "this machine"
        yield _finding(
            ctx,
            "E-REMOTE-NEMO-RL",
            f"nemo_rl_dir on {where} lacks {', '.join(missing)}",
            "nemo_rl_dir",
            "point nemo_rl_dir at a NeMo-RL checkout (the repo root with ray.sub and examples/)",
        )


@rule("remote_megatron_bridge", needs=("megatron_bridge",), on=())
def remote_megatron_bridge(ctx: PreflightContext) -> Iterator[Finding]:
    """The cluster has Megatron-Bridge's conversion script where the config says."""
    from runners.launch.target import bridge_script

    script = bridge_script(ctx.config)
    if script and ctx.remote.exists.get(script) is False:
        yield Finding(
            "E-MEGATRON-BRIDGE-NOT-FOUND",
            f"Megatron-Bridge's conversion script is not on {ctx.remote.host or 'the cluster'}:"
            f" {script}",
            key="megatron_bridge.root",
            fix="set megatron_bridge.root=DIR to the Megatron-Bridge checkout as the job sees it "
            "(the NeMo-RL container has it at /opt/Megatron-Bridge)",
        )


@rule("remote_environment", needs=(), on=())
def remote_environment(ctx: PreflightContext) -> Iterator[Finding]:
    """Secrets are forwarded by name only; settings that hurt on clusters are flagged."""
    at = partial(_finding, ctx)
    f = ctx.remote
    p = f.profile
    for name, value in p.env.items():
        if holds_secret(name, value) or looks_like_secret(value):
            yield at(
                "E-REMOTE-SECRET-INLINE",
                f"env.{name} holds a secret-looking value in env.toml (value not shown)",
                name,
                f'remove it from env and list its NAME in secrets = ["{name}"]; export it in '
                "the shell you submit from",
            )
    from_here = "submit_shell_env" in f.has  # else the cluster's own environment
    for name in p.secrets:
        if from_here and not os.environ.get(name):
            yield at(
                "E-REMOTE-SECRET-MISSING",
                f"secret {name} is listed in the profile but not set in this environment",
                "secrets",
                f"export {name}=... in the shell you submit from",
            )
    text = ""
    if ctx.compiled is not None:  # the raw config, interpolations unresolved
        import json

        text = json.dumps(ctx.raw())
    for name in sorted(set(_OC_ENV.findall(text))):
        value = os.environ.get(name, "(unset: may hold one)")  # a switch here holds none
        if holds_secret(name, value) and name not in p.secrets and name not in p.env:
            yield at(
                "E-REMOTE-SECRET-MISSING",
                f"the config reads ${{oc.env:{name}}} but the profile does not forward {name}",
                "secrets",
                f'add "{name}" to the profile\'s secrets'
                + ("" if from_here else " (and set it in the cluster's environment)"),
            )
    if "UV_CACHE_DIR" in p.env or (from_here and os.environ.get("UV_CACHE_DIR")):
        yield at(
            "W-REMOTE-UV-CACHE",
            "UV_CACHE_DIR is set: NeMo-RL's workers reinstall into it (slow) and concurrent "
            "jobs race on it (RL PR#3379)",
            "env",
            "unset UV_CACHE_DIR; use ray.sub's UV_CACHE_DIR_OVERRIDE on shared storage if needed",
            warn=True,
        )


@rule("remote_inputs", needs=(), on=())
def remote_inputs(ctx: PreflightContext) -> Iterator[Finding]:
    """Inputs exist on the cluster; those not readable here could not be contract-checked."""
    f = ctx.remote
    from runners.preflight.data_paths import found_only_beside

    for art in ctx.inputs:
        if not art.is_path or art.value not in f.exists or found_only_beside(ctx, art):
            continue
        if not f.exists[art.value]:
            yield Finding(
                "E-INPUT-MISSING",
                f"input '{art.name}' ({art.type}) does not exist on {f.host or 'the cluster'}:"
                f" {art.value}",
                key=art.config_key,
                fix="copy the data to shared storage the cluster sees and pass that path",
            )
        elif not os.path.exists(art.value):
            yield Finding(
                "W-REMOTE-UNCHECKED",
                f"input '{art.name}' ({art.value}) exists on {f.host} but not here, so its "
                "contract was not checked",
                key=art.config_key,
                fix=f"check it on the cluster: python -m steps validate {art.type} {art.value}",
                severity=WARNING,
            )


def pinned_ray(checkout: Path | None) -> str | None:
    """The ray version a NeMo-RL checkout's uv.lock pins (None when unreadable)."""
    lock = checkout / "uv.lock" if checkout else None
    try:
        text = lock.read_text(encoding="utf-8") if lock else ""
    except OSError:
        return None
    m = re.search(r'\[\[package\]\]\s*\nname = "ray"\s*\nversion = "([^"]+)"', text)
    return m.group(1) if m else None


@rule("remote_stage", needs=(), on=())
def remote_stage(ctx: PreflightContext) -> Iterator[Finding]:
    """The run dir can be put under remote_dir before submitting (probed where it is copied)."""
    f = ctx.remote
    if not f.stage_problem:
        return
    yield _finding(
        ctx,
        "E-REMOTE-STAGE",
        f"the run dir cannot be staged under remote_dir {f.profile.remote_dir}: {f.stage_problem}",
        "remote_dir",
        f.stage_fix
        or "point remote_dir at a writable folder on shared storage"
        + (" mounted here, or drop it to upload the run dir" if "upload" in f.has else ""),
    )


@rule("remote_ray", needs=(), on=("ray_cluster",))
def remote_ray(ctx: PreflightContext) -> Iterator[Finding]:
    """Ray profiles: paths under the shared folders (remote_dir, shared_dirs) or the upload, GPUs
    the cluster has, Ray version."""
    at = partial(_finding, ctx)
    f = ctx.remote
    p = f.profile
    pinned = pinned_ray(ctx.nemo_rl_dir)
    if pinned and f.ray_version and pinned != f.ray_version:
        yield at(
            "W-RAY-VERSION",
            f"the cluster runs Ray {f.ray_version} but the NeMo-RL checkout pins ray {pinned}",
            "address",
            "use a cluster whose Ray matches NeMo-RL's uv.lock (KubeRay rayVersion)",
            warn=True,
        )
    if f.ray_program and f.cluster_gpus is not None:
        from runners.launch.target import _int

        need = _int(ctx.get("cluster.num_nodes"), 1) * _int(ctx.get("cluster.gpus_per_node"), 1)
        if f.cluster_gpus == 0:
            yield at(
                "W-REMOTE-GPUS",
                "the Ray cluster reports no GPUs (an autoscaling cluster may add them)",
                "address",
                "check `ray status` on the cluster",
                warn=True,
            )
        elif need > f.cluster_gpus:
            yield at(
                "E-REMOTE-GPUS",
                f"the config needs {need} GPUs (cluster.num_nodes x cluster.gpus_per_node) but "
                f"the Ray cluster has {f.cluster_gpus:g}",
                "address",
                "lower cluster.num_nodes/gpus_per_node or use a larger cluster",
            )
    shared = p.shared()
    key = "shared_dirs" if p.shared_dirs else "remote_dir"
    for what, path in job_paths(ctx):
        if path == f.job_dir or (p.nemo_rl_dir and under(path, p.nemo_rl_dir)):
            continue  # the run dir goes with the job; the cluster sees its own checkout
        if any(under(path, d) for d in shared):
            continue
        where = [] if p.remote_dir else ["the uploaded run dir"]  # remote_dir: no upload
        yield at(
            "E-REMOTE-PATH",
            f"{what} {path} is not under {' or '.join([*where, *shared])}: the Ray cluster may "
            "not see it",
            key,
            "keep data and outputs under remote_dir, or name the shared folder that holds it "
            'in the profile: shared_dirs = ["/data"]',
        )
    if not p.remote_dir and f.derived:
        yield at(
            "E-REMOTE-PATH",
            f"{f.derived} input file(s) are rewritten into the run dir (shards joined or "
            "agent_ref added) and must be named by a path the cluster sees; an uploaded "
            "working_dir has none",
            "remote_dir",
            "set remote_dir to shared storage the cluster sees",
        )
