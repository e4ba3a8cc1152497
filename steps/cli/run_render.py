"""How `run` shows a plan (findings and the command first, the config only when asked), its
launch and a followed job (`logs` too)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runners.secrets import redact_text
from steps.cli.output import emit_json

if TYPE_CHECKING:
    from runners.launch.submit import Followed
    from runners.run.execute import Ended, Submitted
    from runners.rundir import JobRecord


def render_event(event: Any, as_json: bool, show_config: bool) -> int:
    """Print one event of `runners.run.execute` as `run` shows it; the exit code when it ends."""
    from runners.run.execute import Done, Ended, HandingOver, Registered, Settled, Submitted

    if isinstance(event, Settled):
        plan = event.plan
        if event.dry_run and as_json:
            emit_json(plan.as_json())
        elif not as_json:  # a live run's plan goes to stderr: stdout is for what it prints
            text = render_plan(plan, dry_run=event.dry_run, show_config=show_config)
            print(text, file=sys.stdout if event.dry_run else sys.stderr)
    elif isinstance(event, Submitted):
        submitted(event)
    elif isinstance(event, Ended):
        ended(event)
    elif isinstance(event, Registered):
        print_registered(event.report)
    elif isinstance(event, HandingOver):
        if as_json and not event.plan.kind.in_process:  # an exec does not come back to print
            emit_json(event.plan.as_json())
    elif isinstance(event, Done):
        _done(event, as_json)
        return event.code
    return 0


def print_registered(report: dict) -> None:
    """What a run registered and logged, one line each on stderr (stdout stays the result),
    flushed: an exec comes next and never comes back."""
    from runners.artifacts.record import report_lines

    for line in report_lines(report):
        print(line, file=sys.stderr, flush=True)


def _done(event: Any, as_json: bool) -> None:
    """The last words: the plan or the job as JSON, --batch's job id line, a run's summary."""
    plan, job = event.plan, event.job
    if event.how in ("chain", "batch", "followed") and as_json:
        emit_json({**plan.as_json(), "job": job.dump() if job else {}}, plan.secrets)
    elif event.how == "batch":
        print(f"{job.job_id} {job.log_path}")
        print(hints(plan.run_dir), file=sys.stderr)
    elif event.how in ("refused", "skipped") and as_json:
        emit_json(plan.as_json())
    elif event.how == "refused":
        where = f"run dir {plan.run_dir}" if plan.written else "nothing written or submitted"
        print(f"preflight failed: fix the errors above ({where})", file=sys.stderr)
    elif event.how == "local" and event.summary is not None:
        import json

        doc = {**plan.as_json(), "result": event.summary} if as_json else event.summary
        print(json.dumps(doc, indent=2, default=str))


def render_plan(plan: Any, dry_run: bool, show_config: bool = False) -> str:
    lines = [f"step: {plan.step_id} {plan.version}", f"config: {plan.config_file}"]
    lines += [f"nemo-rl: {plan.nemo_rl_version}"] if plan.nemo_rl_version else []
    lines.append("--- findings ---")
    lines += [f.render() for f in plan.findings] or ["none"]
    lines.append("--- command ---")
    if plan.skip:
        lines.append(plan.skip)
    elif plan.command:
        lines += [f"cwd: {plan.cwd}", f"argv: {shlex.join(plan.command)}"]
    elif plan.kind.in_process:
        lines.append(f"in-process: {plan.kind.in_process} (cwd {plan.cwd})")
    else:
        lines.append("none (see the finding above)")
    if plan.target is not None:
        lines += _launch_lines(plan.launch_view())
    if plan.written:
        lines.append(f"run dir: {plan.run_dir}")
    elif dry_run:
        lines.append(f"run dir: not written (dry run; --keep writes {plan.run_dir})")
    if show_config:
        import yaml

        body = yaml.safe_dump(plan.resolved_redacted, sort_keys=False, allow_unicode=True)
        lines += ["--- resolved config (secrets redacted) ---", body.rstrip()]
    return redact_text("\n".join(lines), plan.secrets)


def _launch_lines(launch: dict) -> list[str]:
    head = f"--- launch: {launch['executor']} profile [{launch['profile']}]"
    head += f" on {launch['host']} ---" if launch.get("host") else " ---"
    out = [head, f"env file: {launch['env_file']}"]
    if "sbatch" in launch:
        where = f" (in {launch['submit_cwd']})" if launch.get("submit_cwd") else ""
        out.append(f"submit{where}: {shlex.join(launch['sbatch'])}")
    if "entrypoint" in launch:
        out.append(f"address: {launch['address']} (Ray {launch.get('ray_version', '?')})")
        out.append(f"entrypoint: {launch['entrypoint']}")
    if launch.get("command"):
        out.append(f"COMMAND: {launch['command']}")
    if launch.get("nodes"):
        out.append(f"nodes: {launch['nodes']}")
    out.append(f"job run dir: {launch.get('job_dir')}")
    out.append("env vars: " + (", ".join(launch.get("env_names", [])) or "none"))
    out.append("secrets (by name): " + (", ".join(launch.get("secret_names", [])) or "none"))
    return out + _judge_lines(launch.get("upstream_judge") or {})


def _judge_lines(judge: dict) -> list[str]:
    """The upstream judge's CPU job that goes first (runners/run/judge.py), or why none."""
    if not judge:
        return []
    if "skipped" in judge:
        return [f"upstream judge: {judge['skipped']}"]
    out = [f"--- upstream judge first: a CPU job in {judge['image']} ---"]
    if "sbatch" in judge:
        out.append(f"submit (in {judge['submit_cwd']}): {shlex.join(judge['sbatch'])}")
    if "entrypoint" in judge:
        out.append(f"entrypoint: {judge['entrypoint']}")
    if judge.get("command"):
        out.append(f"command: {judge['command']}")
    out.append(f"then: {judge['gate']}")
    return out


def hints(run_dir: Path) -> str:
    return (
        f"  follow: python -m steps logs {run_dir} -f\n"
        f"  status: python -m steps status {run_dir}\n"
        f"  cancel: python -m steps cancel {run_dir}"
    )


def submitted(event: Submitted) -> None:
    """The queued job, on stderr (stdout is the job id line of --batch, or the log)."""
    job = event.job
    if job.submit_note:
        print(f"note: {job.submit_note}", file=sys.stderr)
    where = f" on {job.host}" if job.host else ""
    judge = event.judge
    if judge is not None:  # NeMo-RL's own checks in the image, a CPU job before this one
        how = "passed" if judge.exit_code == 0 else f"runs first; job {job.job_id} waits for it"
        print(f"upstream judge: {judge.executor} job {judge.job_id} {how}; log: "
              f"{judge.log_path}", file=sys.stderr)  # fmt: skip
    print(
        f"submitted {job.executor} job {job.job_id}{where}; log: {job.log_path}",
        file=sys.stderr,
        flush=True,
    )


def ended(event: Ended) -> None:
    """How following ended: detached (Ctrl-C) says how to go on; else the job's end."""
    if event.chain:
        if event.followed.detached:
            _chain_detached(event.run_dir, event.job)
    elif event.job is not None:
        report(event.run_dir, event.job, event.followed, until_done=True)
        if not event.followed.detached:
            _judge_refused(event.run_dir)


def _judge_refused(run_dir: Path) -> None:
    """A GPU job the upstream judge held back: why, with the judge's findings."""
    from runners.run.judge import verdict
    from runners.rundir import read_record

    judge = verdict(run_dir, read_record(run_dir))
    if judge is not None and judge.refused:
        print("\n".join([judge.line(), *(f.render("  ") for f in judge.findings)]), file=sys.stderr)


def follow(
    run_dir: Path, job: JobRecord, until_done: bool, out: Any = None, tail: bool = True
) -> int:
    """Stream the driver log; with until_done, the job's exit code (Ctrl-C detaches: 130)."""
    from runners.launch.submit import follow as follow_job

    followed = follow_job(run_dir, job, until_done, out, tail)
    report(run_dir, job, followed, until_done)
    return followed.code


def report(run_dir: Path, job: JobRecord, followed: Followed, until_done: bool) -> None:
    """Detached: how to follow, check and cancel; ended (until_done): its state and code."""
    if followed.detached:
        print(f"\ndetached: job {job.job_id} keeps running\n{hints(run_dir)}", file=sys.stderr)
    elif until_done:
        print(f"job {job.job_id} ended: {job.state} (exit code {job.exit_code})", file=sys.stderr)


def _chain_detached(run_dir: Path, job: JobRecord | None) -> None:
    print(
        f"\ndetached: segment job {job.job_id if job else None} runs on to its end, but the "
        "chain stops advancing: no further segment starts while this process is not running. "
        "To go on, run the same command again (it waits for this segment's end and carries "
        f"the chain on from the latest complete checkpoint);\n{hints(run_dir)}",
        file=sys.stderr,
    )
