"""`diagnose RUN`: why a cluster job ended, named as a kind of FAILURES.md (the first error in
its logs, weighed against the scheduler's state), with evidence lines and the usual fix."""

from __future__ import annotations

import argparse

HELP = "name why a cluster job failed: its first error, as a kind of FAILURES.md, with evidence"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from steps.cli.common import add_run_arguments

    add_run_arguments(parser, ref=True)
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def run(args: argparse.Namespace) -> int:
    from steps.cli.pipeline_cmd import pipeline_hook

    if (done := pipeline_hook("diagnose", args)) is not None:  # a pipeline's root or stage
        return done
    from runners.launch.jobs import find_run, refresh
    from runners.launch.observe import diagnose_run
    from runners.run.judge import verdict
    from steps.cli.status_cmd import say  # log lines: control sequences removed

    run_dir, data = find_run(args.ref, args.runs_dir)
    judge = verdict(run_dir, data)
    if judge is not None and judge.refused:
        return _refused(run_dir, judge, args.json)
    shown = refresh(run_dir, data)
    result = diagnose_run(run_dir, {**data, "job": shown.dump()}, shown)
    if args.json:
        from steps.cli.output import emit_json

        emit_json({"run_dir": str(run_dir), "job_id": shown.job_id, **result.to_dict()})
        return 0
    say(f"run dir: {run_dir}")
    code = "" if result.exit_code is None else f", exit code {result.exit_code}"
    say(f"job: {shown.executor} {shown.job_id} ({result.state or 'state unknown'}{code})")
    if result.kind is None:
        say(result.title)
        return 0
    retry = "yes" if result.retryable else "no"
    say(f"failure: {result.kind} ({result.title}); a retry can help: {retry}")
    facts = {"training step reached": result.step, "in": result.method, "message": result.message}
    for label, value in facts.items():
        if value not in (None, ""):
            say(f"{label}: {value}")
    if result.evidence:
        say("evidence:")
        for ev in result.evidence:
            say(f"  {ev.render()}")
    if result.note:
        say(f"note: {result.note}")
    if result.later:
        say("later (consequences): " + "; ".join(result.later))
    say(f"fix: {result.fix}")
    return 0


def _refused(run_dir, judge, as_json: bool) -> int:
    """The upstream judge's CPU job failed, so the GPU job never started: its findings."""
    from steps.cli.status_cmd import say

    fix = "fix what the judge found and run again (--no-upstream-judge skips the judge)"
    if not judge.judged:
        fix = f"read the judge's log ({judge.job.log_path}): it ended without a verdict"
    if as_json:
        from steps.cli.output import emit_json

        emit_json({"run_dir": str(run_dir), "kind": "upstream-judge", "retryable": False,
                   "upstream_judge": judge.to_dict(), "fix": fix})  # fmt: skip
        return 0
    say(f"run dir: {run_dir}")
    say(judge.line())
    say("failure: upstream-judge (checked in the image before the GPU job); a retry can help: no")
    for found in judge.findings:
        say(found.render("  "))
    say(f"fix: {fix}")
    return 0
