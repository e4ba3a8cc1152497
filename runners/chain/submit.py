"""Submitting a chain: the segment script, the chain record, and the first segment's sbatch.

Every segment is the same batch script (`chain.sbatch` in the run dir): `chain-step begin`,
then NeMo-RL's own ray.sub run inside the allocation (unchanged, from the checkout, with the
same COMMAND/CONTAINER/MOUNTS/... variables a single job gets), then `chain-step end`. The
decisions run on the allocation's first node, outside the container, where sbatch and scancel
are. ray.sub's header options are given on the command line (`--exclusive`; `--dependency`
becomes the chain's own), and the batch output is appended across a requeue.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from catalog.config_values import dotted_get
from catalog.errors import StepsError
from runners.chain.record import CHAIN_SECRETS, ChainRecord
from runners.chain.settings import ChainConfig
from runners.launch.job_secrets import secrets_path

SCRIPT = "chain.sbatch"
START_MARK = "@@steps-segment-start"
END_MARK = "@@steps-segment-end"


def segment_script(steps_launcher: str, job_dir: str, ray_sub: str) -> str:
    """The batch script of every segment (bash; ray.sub runs as a child of it).

    Each segment's driver reads and removes the run dir's secrets file (launch/job_secrets.py):
    the first segment keeps a 0600 copy for the chain (`CHAIN_SECRETS`) and every segment puts
    the file back from it; `chain-step` removes both once the chain ends."""
    steps = shlex.split(steps_launcher)
    begin = shlex.join([*steps, "chain-step", "begin", job_dir])
    end = shlex.join([*steps, "chain-step", "end", job_dir])
    per_job = shlex.quote(secrets_path(job_dir))
    kept = shlex.quote(f"{job_dir}/{CHAIN_SECRETS}")
    return (
        "#!/bin/bash\n"
        f"# steps chain segment: decide, run NeMo-RL's ray.sub, decide. Run dir {job_dir}\n"
        f'echo "{START_MARK} $(date +%s.%N) job $SLURM_JOB_ID"\n'
        f"trap 'echo \"{END_MARK} $(date +%s.%N)\"' EXIT\n"
        f"decision=$({begin}) || exit $?\n"
        'if [ "$decision" != run ]; then echo "chain: nothing to run ($decision)"; exit 0; fi\n'
        f"if [ -f {per_job} ] && [ ! -f {kept} ]; then (umask 077; cp {per_job} {kept}); fi\n"
        f"if [ -f {kept} ]; then (umask 077; cp {kept} {per_job}); fi\n"
        f"bash {shlex.quote(ray_sub)}\n"
        "code=$?\n"
        f'{end} --exit-code "$code"\n'
        'exit "$code"\n'
    )


def host_path(path: str, mounts: list[str]) -> str:
    """A path as the job's container sees it, as the batch host sees it (reverse mounts)."""
    best: tuple[int, str] | None = None
    for mount in mounts:
        parts = mount.split(":")
        if len(parts) < 2:
            continue
        src, dst = parts[0].rstrip("/") or "/", parts[1].rstrip("/") or "/"
        inside = path == dst or path.startswith(dst + "/")
        if inside and (best is None or len(dst) > best[0]):
            best = (len(dst), src + path[len(dst) :])
    return best[1] if best else path


def chain_record(plan: Any, target: Any, chain: ChainConfig) -> ChainRecord:
    """The record segments decide from: paths as the batch host sees them, the sbatch argv."""
    req = plan.request
    profile = target.profile
    ckpt = str(dotted_get(plan.resolved, "checkpointing.checkpoint_dir") or "")
    if not ckpt.startswith("/"):  # relative to the container's workdir: the checkout
        ckpt = f"{req.cwd.rstrip('/')}/{ckpt}"
    backend = target.backend
    return ChainRecord(
        max_segments=chain.options.max_segments,
        gpu_hours=chain.options.gpu_hours,
        gpus=req.nodes * (req.gpus_per_node or profile.gpus_per_node or 0),
        checkpoint_dir=host_path(ckpt, list(profile.mounts)),
        max_steps=chain.max_steps,
        max_epochs=chain.max_epochs,
        must_save_by=chain.must_save_by,
        must_save_by_from=chain.must_save_by_from,
        wandb_id=chain.wandb_id,
        job_name=backend.job_name(req),
        sbatch=backend.sbatch_argv(req, backend.job_name(req)),
        submit_cwd=req.cwd,
        log_dir=host_path(req.job_dir, list(profile.mounts)),
    )


def configure(req: Any, target: Any) -> None:
    """Point the launch request at the segment script (a dry run shows this sbatch too)."""
    if target.profile.executor != "slurm":
        raise StepsError(
            "E-CHAIN-EXECUTOR",
            f"--until-done needs a Slurm profile; [{target.name}] is {target.profile.executor}",
            fix="use a Slurm profile (a Ray chain is not supported yet)",
            exit_code=2,
        )
    req.batch_script = f"{req.job_dir}/{SCRIPT}"
    req.sbatch_extra = ["--exclusive", "--open-mode=append"]


def prepare_chain(plan: Any, target: Any) -> None:
    """Write the segment script and the chain record into the run dir (staged with it)."""
    from runners.rundir import update_record

    req = plan.request
    mounts = list(target.profile.mounts)
    ray_sub = host_path(f"{req.cwd}/ray.sub", mounts)
    text = segment_script(target.profile.steps_launcher, host_path(req.job_dir, mounts), ray_sub)
    Path(plan.run_dir, SCRIPT).write_text(text, encoding="utf-8")
    record = chain_record(plan, target, plan.chain)
    update_record(plan.run_dir, chain=record.model_dump(mode="json"))
