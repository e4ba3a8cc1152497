"""After the plan: what `run` writes, and when, and the hand-over here or to a cluster.

`execute` yields typed events as they happen; the CLI renders each and exits with `Done.code`.
A dry run writes the run dir only with `keep`. Preflight errors hand over nothing (1): a local
run's run dir is still written, a refused cluster launch leaves nothing. A cluster launch records
the job, submits, and follows it when attached; a local run hands over as its kind does.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:  # the submit stack only when a job goes out (a dry run is cheap to start)
    from runners.launch.submit import Followed
    from runners.launch.target import ClusterTarget
    from runners.run.cluster import Where
    from runners.run.plan import RunPlan, RunRequest
    from runners.rundir import JobRecord


@dataclass
class Settled:
    """Planned, and its run dir written or not as the rules say: shown before any hand-over."""

    plan: RunPlan
    dry_run: bool


@dataclass
class Submitted:
    """The job is queued and run.json holds its record (and the upstream judge's)."""

    job: JobRecord
    attached: bool
    judge: JobRecord | None = None


@dataclass
class Ended:
    """Following the job, or driving a Ray chain, ended (`followed.detached`: Ctrl-C)."""

    run_dir: Path
    job: JobRecord | None
    followed: Followed
    chain: bool = False


@dataclass
class HandingOver:
    """A local run starts now (an exec does not come back)."""

    plan: RunPlan


@dataclass
class Registered:
    """The artifact registry's report (pending versions, or settled after an in-process run)."""

    report: dict


@dataclass
class Done:
    """The last event: the exit code, how the run ended here, what there is to show."""

    code: int
    plan: RunPlan
    how: Literal["dry_run", "refused", "chain", "batch", "followed", "skipped", "local"]
    job: JobRecord | None = None
    summary: dict | None = None


Event = Settled | Submitted | Ended | HandingOver | Registered | Done


def plan_for(
    req: RunRequest,
    where: Where,
    env: dict[str, str],
    step_dir: Path | None = None,
    argv: list[str] | None = None,
) -> RunPlan:
    """The plan of `req` where `target_for` put it (`step_dir`: a step folder's `step.py`)."""
    from runners.run import plan_run
    from runners.run.step import entry_for

    plan = plan_run(req, entry=entry_for(req, step_dir), env=env, argv=argv, target=where.target)
    plan.env_file = str(where.env_file) if where.env_file else None
    return plan


def execute(
    plan: RunPlan,
    target: ClusterTarget | None,
    *,
    dry_run: bool = False,
    keep: bool = False,
    force: bool = False,
    out: TextIO | None = None,
) -> Iterator[Event]:
    """Carry out `plan` as the module's rules say; `out` gets a followed job's log."""
    from runners.run import launch_local, record_pending, write_run_dir_for

    if dry_run:
        if keep:
            write_run_dir_for(plan)
        yield Settled(plan, dry_run=True)
        yield Done(0 if plan.ok else plan.refusal_code, plan, "dry_run")
        return
    if plan.ok or (target is None and plan.refusal_code == 1):  # a refused run's record
        write_run_dir_for(plan)
    yield Settled(plan, dry_run=False)
    if not plan.ok:
        yield Done(plan.refusal_code, plan, "refused")
    elif target is not None:
        yield from _on_cluster(plan, target, out)
    elif plan.deferred is not None:
        raise plan.deferred
    elif plan.skip:
        yield Done(0, plan, "skipped")
    else:
        if not plan.kind.in_process:  # an exec never comes back: its outputs end up pending
            yield Registered(record_pending(plan))
        yield HandingOver(plan)
        summary = launch_local(plan, force=force)
        if summary is not None and "artifacts" in summary:
            yield Registered(summary["artifacts"])
        yield Done(0, plan, "local", summary=summary)


def _on_cluster(plan: RunPlan, target: ClusterTarget, out: TextIO | None) -> Iterator[Event]:
    """Record, submit, and follow when attached (a Ray chain: driven until done or stopped)."""
    from runners.chain.submit import prepare_chain
    from runners.launch.submit import follow, recorded_job
    from runners.run import record_pending
    from runners.run.cluster import drive_chain, judged_first, submit

    if plan.chain is not None and target.traits.chain == "attached":  # a Ray chain: driven here
        judged_first(plan, target, [])
        prepare_chain(plan, target)
        yield Registered(record_pending(plan))
        done = drive_chain(plan, target, out or sys.stdout)
        yield Ended(plan.run_dir, done.job, done, chain=True)
        yield Done(done.code, plan, "chain", job=recorded_job(plan.run_dir))
        return
    job, pending = submit(plan, target)
    yield Registered(pending)
    from runners.rundir import JobRecord, read_record

    judge = read_record(plan.run_dir).get("judge")
    yield Submitted(job, target.attached, JobRecord.model_validate(judge) if judge else None)
    if not target.attached:
        yield Done(0, plan, "batch", job=job)
        return
    followed = follow(plan.run_dir, job, until_done=True, out=out)
    yield Ended(plan.run_dir, job, followed)
    yield Done(followed.code, plan, "followed", job=job)
