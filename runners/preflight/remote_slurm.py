"""Preflight for ray.sub on Slurm: what its `#SBATCH` header and its srun steps will ask of the
cluster (placeholders ACCOUNT/PARTITION, CPUS_PER_WORKER).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from catalog.errors import Finding
from runners.preflight import PreflightContext, rule
from runners.preflight.remote import _finding, _ray_sub
from runners.preflight.topology import as_int

NO_ACCOUNTING = "accounting_storage/none"


def ray_sub_cpus(ctx: PreflightContext) -> tuple[int, str] | None:
    """(CPUs each ray.sub srun step asks, why) when known before submitting."""
    f = ctx.remote
    env = f.profile.env
    if "CPUS_PER_WORKER" in env:
        asked = as_int(env["CPUS_PER_WORKER"])
        return (asked, "CPUS_PER_WORKER in the profile's env") if asked else None
    if f.ray_sub_cpus != "16":  # "node": the node's own CPUTot; None: not known
        return None
    gpus = (
        as_int(env.get("GPUS_PER_NODE"))
        or as_int(ctx.get("cluster.gpus_per_node"))
        or f.profile.gpus_per_node
        or 8
    )
    return 16 * gpus, f"ray.sub's default CPUS_PER_WORKER = 16 x GPUS_PER_NODE ({gpus})"


@rule("remote_cpus", needs=("nemo_rl_config",), on=("ray_sub",))
def remote_cpus(ctx: PreflightContext) -> Iterator[Finding]:
    """ray.sub's srun steps ask no more CPUs than the partition's nodes have."""
    f = ctx.remote
    if not _ray_sub(ctx) or not f.node_cpus:
        return
    asked = ray_sub_cpus(ctx)
    if asked is None or asked[0] <= f.node_cpus:
        return
    cpus, why = asked
    yield _finding(
        ctx,
        "E-REMOTE-CPUS",
        f"ray.sub starts each Ray node with srun --cpus-per-task={cpus} ({why}) but partition "
        f"{f.partition or '(default)'} has nodes with {f.node_cpus} CPUs: the head step would "
        "fail with 'More processors requested than permitted' after the job is queued",
        "env",
        f'set env = {{ CPUS_PER_WORKER = "{f.node_cpus}" }} in the profile',
    )


@rule("remote_sbatch_defaults", needs=(), on=("sbatch",))
def remote_sbatch_defaults(ctx: PreflightContext) -> Iterator[Finding]:
    """The profile's partition is one the cluster has, and ray.sub's ACCOUNT/PARTITION
    placeholders are replaced: by the profile or the cluster's defaults."""
    at = partial(_finding, ctx)
    f = ctx.remote  # set: a remote rule runs only for a cluster launch (RuleSpec.applies_on)
    known, asked = f.partitions, f.profile.partition
    unknown = [p for p in asked.split(",") if p not in known] if asked and known else []
    if unknown:
        yield at(
            "E-REMOTE-PARTITION",
            f"partition {', '.join(unknown)} is not a partition of the cluster on "
            f"{f.host or 'this machine'} (`scontrol show partition` lists {', '.join(known)}): "
            "sbatch would refuse the job",
            "partition",
            f"set partition to one of {', '.join(known)} (`sinfo -s` lists them)",
        )
    if not _ray_sub(ctx):
        return
    if not f.partition and f.partitions_read:
        yield at(
            "E-REMOTE-PARTITION",
            "the profile has no partition and the cluster has no default partition "
            "(`scontrol show partition`): sbatch would take ray.sub's placeholder "
            "--partition=PARTITION and refuse the job",
            "partition",
            'set partition = "NAME" in the profile (`sinfo -s` lists them)',
        )
    if not f.account and f.accounting and f.accounting != NO_ACCOUNTING:
        yield at(
            "E-REMOTE-ACCOUNT",
            "the profile has no account and the cluster's default account could not be read "
            "(`sacctmgr show user`): sbatch would take ray.sub's placeholder --account=ACCOUNT "
            "and refuse the job",
            "account",
            'set account = "NAME" in the profile (`sacctmgr show assoc user=$USER` lists yours)',
        )
