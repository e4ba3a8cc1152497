"""Submitting a chain: the segment script, the chain record, and the first segment's sbatch.

Every segment is the same batch script (`chain.sbatch`): `segment_program begin`, NeMo-RL's own
ray.sub (unchanged, with the variables a single job gets), then `end`. ray.sub's header options
are given on the command line (`--exclusive`; `--dependency` is the chain's own), and the batch
output is appended across a requeue.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from catalog.config_values import dotted_get
from catalog.errors import StepsError
from runners.chain.follow import refuse_if_live
from runners.chain.record import CHAIN_SECRETS, ChainRecord
from runners.chain.settings import ChainConfig
from runners.launch import job_code
from runners.launch.job_secrets import secrets_path
from runners.launch.request import under

SCRIPT = "chain.sbatch"
MIN_PYTHON = (3, 8)  # segment_program and what it imports
START_MARK = "@@steps-segment-start"
END_MARK = "@@steps-segment-end"


def segment_script(job_dir: str, ray_sub: str) -> str:
    """The batch script of every segment (ray.sub runs as a child of it). Each segment's driver
    reads and removes the secrets file: the first segment keeps a 0600 copy for the chain
    (`CHAIN_SECRETS`) and every segment puts the file back from it."""
    decide = ["python3", "-I", job_code.segment_program(job_dir)]
    begin = shlex.join([*decide, "begin", job_dir])
    end = shlex.join([*decide, "end", job_dir])
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
        f'{end} "$code"\n'
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
    """The record segments decide from: paths as the batch host sees them, the sbatch argv (on
    Ray this process reads the checkpoint dir, on the profile's shared storage)."""
    req = plan.request
    profile = target.profile
    ckpt = str(dotted_get(plan.resolved, "checkpointing.checkpoint_dir") or "")
    if not ckpt.startswith("/"):  # relative to the container's workdir: the checkout
        ckpt = f"{req.cwd.rstrip('/')}/{ckpt}"
    backend = target.backend
    common = dict(
        max_segments=chain.options.max_segments,
        gpu_hours=chain.options.gpu_hours,
        gpus=req.nodes * (req.gpus_per_node or getattr(profile, "gpus_per_node", None) or 0),
        max_steps=chain.max_steps,
        max_epochs=chain.max_epochs,
        must_save_by=chain.must_save_by,
        must_save_by_from=chain.must_save_by_from,
        wandb_id=chain.wandb_id,
    )
    if target.traits.chain == "attached":
        if not any(under(ckpt, d) for d in profile.shared()):
            raise StepsError(
                "E-CHAIN-CHECKPOINTING",
                f"a Ray chain reads training state from checkpointing.checkpoint_dir ({ckpt}) "
                "here, but it is under none of the profile's shared folders "
                f"({', '.join(profile.shared()) or 'none'})",
                fix="set checkpointing.checkpoint_dir under the profile's remote_dir or "
                "shared_dirs (mounted here and on the cluster)",
                exit_code=2,
            )
        common.update(checkpoint_dir=ckpt, job_name=backend.submission_id(req))
    else:
        name, mounts = backend.job_name(req), list(profile.mounts)
        common.update(
            checkpoint_dir=host_path(ckpt, mounts), job_name=name, submit_cwd=req.cwd,
            sbatch=backend.sbatch_argv(req, name), log_dir=host_path(req.job_dir, mounts),
        )  # fmt: skip
    return ChainRecord(executor=profile.executor, **common)


def configure(req: Any, target: Any) -> None:
    """Point the launch request at the segment script (a dry run shows this sbatch too); a
    Slurm chain goes with `--batch`, a Ray chain (driven by this process) with `--run`."""
    executor, attached, mode = target.profile.executor, target.attached, target.traits.chain
    if mode == "attached" and attached:
        return
    if mode != "batch" or attached:
        how = f"--{'run' if mode == 'attached' else 'batch'} {executor.upper()}_PROFILE"
        raise StepsError(
            "E-CHAIN-EXECUTOR",
            f"--until-done with [{target.name}] ({executor}) goes with {how}",
            fix="a Slurm chain: --batch SLURM_PROFILE --until-done; a Ray chain (this process "
            "drives it): --run RAY_PROFILE --until-done",
            exit_code=2,
        )
    req.batch_script = f"{req.job_dir}/{SCRIPT}"
    req.sbatch_extra = ["--exclusive", "--open-mode=append"]


def refuse_busy(plan: Any, target: Any) -> None:
    """While planning: E-CHAIN-BUSY when an earlier chain of this step still trains the same
    checkpoint dir, the record's own refusals, and (Slurm) E-CHAIN-PYTHON."""
    record = chain_record(plan, target, plan.chain)
    if record.attached:
        from runners.chain.ray_resume import unfinished

        unfinished(plan.run_dir, record)
    else:
        refuse_node_python(getattr(getattr(target, "facts", None), "python3", None), target)
        refuse_if_live(plan.run_dir, record, target.profile)


def refuse_node_python(found: list[str] | None, target: Any) -> None:
    """E-CHAIN-PYTHON (exit 2): the jobs' `python3` is missing or older than 3.8."""
    if not found:
        return
    version, said = [*found, "", ""][:2]
    parts = version.split(".")
    if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]):
        if (int(parts[0]), int(parts[1])) >= MIN_PYTHON:
            return
        why = f"python3 there is {version} ({said})"
    else:
        why = f"no python3 answered there: {said or 'not found on PATH'}"
    where = target.host or "this machine"
    raise StepsError(
        "E-CHAIN-PYTHON",
        f"a Slurm chain decides on the allocation's first node, outside the container, with "
        f"the `python3` jobs find on PATH on {where}; {why}, and 3.8 or later is needed",
        path=str(target.env_file),
        fix="put a Python 3.8 or later first on PATH where you submit (jobs inherit it): "
        "`module load python`, or a `python3` link in a folder first on PATH; nothing else "
        "needs installing (the chain's program is staged with the run dir)",
        exit_code=2,
    )


def prepare_chain(plan: Any, target: Any) -> None:
    """Write the chain record and (Slurm) the segment script and our code into the run dir."""
    from runners.rundir import update_record

    req = plan.request
    record = chain_record(plan, target, plan.chain)
    if not record.attached:  # else no segment script: the attached process is the driver
        mounts = list(target.profile.mounts)
        ray_sub = host_path(f"{req.cwd}/ray.sub", mounts)
        text = segment_script(host_path(req.job_dir, mounts), ray_sub)
        Path(plan.run_dir, SCRIPT).write_text(text, encoding="utf-8")
        job_code.stage(plan.run_dir)
    update_record(plan.run_dir, chain=record.model_dump(mode="json"))
