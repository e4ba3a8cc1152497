"""A run handed to a cluster: the profile `--run/--batch` names, the submit, a Ray chain driven."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from runners.run import record_pending

if TYPE_CHECKING:  # the submit stack (pydantic records, backends) only when a job goes out
    from runners.launch.submit import Followed
    from runners.launch.target import ClusterTarget
    from runners.run.plan import RunPlan, RunRequest
    from runners.rundir import JobRecord


@dataclass
class Where:
    """Where a run goes: `target` is None for this machine (no profile, or a local one)."""

    target: ClusterTarget | None = None
    env_file: Path | None = None


def target_for(
    req: RunRequest, profile: str | None, env_file: str | None, env: dict[str, str], cwd: Path,
    attached: bool,
) -> Where:  # fmt: skip
    """The cluster target of PROFILE; a `local` profile's settings go into `req` and `env`."""
    if not profile:
        return Where()
    from runners.launch.target import cluster_target

    target, chosen, path = cluster_target(profile, env_file, env, cwd, attached=attached)
    here = req.nemo_rl or env.get("NEMO_RL_HOME")
    if target is not None and not target.profile.nemo_rl_dir and here:
        # The checkout compiled against, at the same path on the cluster (the probe checks).
        at = str((cwd / here).resolve())
        target = replace(target, profile=target.profile.model_copy(update={"nemo_rl_dir": at}))
    if target is None:  # executor = "local": this machine, with the profile's settings
        req.nemo_rl = req.nemo_rl or chosen.nemo_rl_dir
        env.update(chosen.env)
        if chosen.launcher and not req.launcher:
            req.launcher, req.launcher_from = chosen.launcher, f"profile [{profile}]"
    return Where(target, path)


def submit(
    plan: RunPlan, target: ClusterTarget, after: list[str] | None = None, gate: str | None = None
) -> tuple[JobRecord, dict]:
    """Submit the planned job (a Slurm chain's script and record first): its record, and the
    report of its outputs registered pending. `after`: jobs it starts after (a pipeline's
    earlier stages); `gate`: a chain's held job, released at the chain's end."""
    if plan.chain is not None:
        from runners.chain.submit import prepare_chain
        from runners.rundir import read_record, update_record

        prepare_chain(plan, target)  # the chain's sbatch argv, without `after`
        if gate:
            update_record(plan.run_dir, chain={**read_record(plan.run_dir)["chain"],
                                               "gate_job_id": gate})  # fmt: skip
    if plan.kind.runs_our_code:  # nothing of ours is installed there: the job carries a copy
        from runners.launch.job_code import stage

        stage(plan.run_dir)
    from runners.launch.submit import submit_job

    assert plan.request is not None  # a cluster plan has its launch request
    plan.request.after = judged_first(plan, target, list(after or []))
    job = submit_job(plan.run_dir, plan.step_id, plan.request, target)
    return job, record_pending(plan)


def judged_first(plan: RunPlan, target: ClusterTarget, after: list[str]) -> list[str]:
    """Submit the upstream judge; the jobs the GPU job starts after. A judge that already
    refused becomes the run's job and E-UPSTREAM-JOB (exit 1) says why."""
    from runners.run.judge import gate, refused, submit_judge, verdict

    judge = submit_judge(plan, target, after)
    if judge is None:
        return after
    after = gate(plan, target, judge, after)
    if not refused(judge):
        return after
    from catalog.errors import StepsError
    from runners.rundir import read_record, update_record

    update_record(plan.run_dir, job=judge.dump())
    seen = verdict(plan.run_dir, read_record(plan.run_dir))
    found = [f.render("  ") for f in (seen.findings if seen else [])]
    raise StepsError(
        "E-UPSTREAM-JOB",
        f"{seen.line() if seen else 'the upstream judge failed'}"
        + ("".join(f"\n{line}" for line in found) if found else f" (its log: {judge.log_path})"),
        fix="fix what the judge found and run again; `python -m steps status "
        f"{plan.run_dir}` shows it again (--no-upstream-judge skips the judge)",
        exit_code=1,
    )


def drive_chain(plan: RunPlan, target: ClusterTarget, out: TextIO) -> Followed:
    """Drive a Ray chain until it is done or stops. Ctrl-C detaches: the running segment goes
    on, no further one starts; the same command again carries the chain on."""
    from catalog.errors import StepsError
    from runners.chain.ray_driver import drive
    from runners.launch.shell import LostContact
    from runners.launch.submit import Followed, recorded_job

    try:
        return Followed(drive(plan.run_dir, plan.request, target.backend, out))
    except KeyboardInterrupt:
        return Followed(130, detached=True, job=recorded_job(plan.run_dir))
    except LostContact as lost:
        raise StepsError(
            "E-REMOTE-LOST",
            f"lost contact with {lost.where}; the segment may still run but the chain stops "
            f"advancing ({lost.detail})",
            fix="check the connection; run the same command again to go on from the latest "
            "complete checkpoint",
            exit_code=2,
        ) from None
