"""A NeMo-RL launch on this machine asks for no more GPUs than it shows (counted without torch);
nothing is judged when NeMo-RL would attach to a running Ray cluster.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

from catalog.config_values import as_int
from catalog.errors import Finding
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import finding, warning

SMI_SECONDS = 10


def visible_gpus(env: Mapping[str, str]) -> int | None:
    """GPUs a process started with `env` sees (None: cannot tell)."""
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        ids = [d for d in cvd.split(",") if d.strip()]
        if not ids or ids[0].strip() in ("-1", "NoDevFiles"):
            return 0
        return len(ids)
    smi = shutil.which("nvidia-smi", path=env.get("PATH"))
    if smi is None:
        return 0
    try:
        out = subprocess.run(
            [smi, "-L"], capture_output=True, text=True, timeout=SMI_SECONDS, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return 0 if "NVIDIA-SMI has failed" in out.stdout + out.stderr else None
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def joins_ray_cluster(env: Mapping[str, str]) -> bool:
    """NeMo-RL would attach to a running Ray cluster rather than start one with these GPUs
    (RAY_ADDRESS, or the address file a local Ray head writes under Ray's temp dir)."""
    tmp = env.get("RAY_TMPDIR") or "/tmp"
    return bool(env.get("RAY_ADDRESS")) or (Path(tmp) / "ray" / "ray_current_cluster").exists()


@rule("local_gpus", needs=("nemo_rl_config",))
def local_gpus(ctx: PreflightContext) -> Iterator[Finding]:
    """E-LOCAL-GPUS / W-LOCAL-GPUS: the cluster section asks for more GPUs than are here."""
    launch = ctx.local_launch
    if launch is None or ctx.remote is not None:
        return
    nodes, per_node = as_int(ctx.get("cluster.num_nodes")), as_int(ctx.get("cluster.gpus_per_node"))
    env = dict(launch.env)
    if not nodes or not per_node or joins_ray_cluster(env):
        return
    have = visible_gpus(env)
    need = nodes * per_node
    if have is None or have >= need:
        return
    key = "cluster.gpus_per_node" if nodes == 1 else "cluster.num_nodes"
    ask = f"num_nodes ({nodes}) x gpus_per_node ({per_node}) = {need} GPUs"
    wait = (
        "NeMo-RL would retry placement for about 100 s, then fail with ResourceInsufficientError"
        " (distributed/virtual_cluster.py:766, v0.7.0)"
    )
    if have == 0:
        yield warning(
            ctx,
            "W-LOCAL-GPUS",
            key,
            f"no GPU is visible here, and the config asks for {ask}; launched from this "
            f"machine, {wait}",
            "fine for a dry run; launch on a machine with the GPUs, or on a cluster "
            "(--run/--batch PROFILE)",
        )
        return
    yield finding(
        ctx,
        "E-LOCAL-GPUS",
        key,
        f"the config asks for {ask} but this machine shows {have} "
        f"(CUDA_VISIBLE_DEVICES / nvidia-smi -L); {wait}",
        f"set cluster.num_nodes=1 cluster.gpus_per_node={have} (and fit the parallel sizes to "
        "it), or launch on a cluster (--run/--batch PROFILE)",
    )
