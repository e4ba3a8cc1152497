"""`pipeline run FILE --batch|--run PROFILE`: check every stage, then queue them all (`--batch`,
Slurm) or drive them one after another from here (`--run`; a Ray cluster has no queue to hold a
stage, so a Ray pipeline is `--run`). Nothing is queued unless every check passed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from catalog.errors import StepsError
from runners.secrets import redact_text


def _report(stages: list, out: Any, secrets: dict[str, str]) -> int:
    """Print each stage's findings; the exit code when any stage has an error (else 0)."""
    worst = 0
    for i, sp in enumerate(stages, 1):
        st = sp.stage
        out.write(f"{i}. {st.id} ({st.step}) [{sp.profile}]{' until done' if sp.chain else ''}\n")
        for f in sp.findings:
            out.write(redact_text(f.render(indent="   "), secrets) + "\n")
        for p, b in st.inputs.items():
            if b.producer:
                out.write(f"   input {p} <- {b.source}: written by stage {b.producer} first, "
                          "judged when this stage starts\n")  # fmt: skip
        if not sp.ok:
            worst = max(worst, sp.code or 1)
        elif not any(f.is_error for f in sp.findings):
            out.write("   checks clean\n")
    return worst


def run_on_cluster(
    plan: Any,
    pf: Any,
    opts: Any,
    env: dict,
    secrets: dict[str, str],
    forced: set[str],
    here: Callable[[list], int],
) -> int:
    """0 when every stage was queued, ran (`here(stages)` drives them), or checked clean (dry run);
    1 when a check failed (nothing queued); else the failing stage's code. `forced`: stages
    submitted even when up to date."""
    from runners.pipeline.cluster_plan import plan_cluster

    out = opts.out
    stages = plan_cluster(plan, pf, opts, env)
    queued = all("sbatch" in sp.target.traits.has for sp in stages)  # stages wait in a queue
    if not opts.attached and not queued:
        raise StepsError(
            "E-PIPELINE-PROFILE",
            "a pipeline on Ray is driven by this process: stages wait for each other here, "
            "not in a queue",
            path=str(pf.path),
            fix="use `pipeline run FILE --run PROFILE` (or Slurm profiles for every stage)",
            exit_code=2,
        )
    worst = _report(stages, out, secrets)
    if worst:
        out.write(f"checks failed: nothing submitted ({len(stages)} stages)\n")
        return worst
    if opts.dry_run:
        out.write(f"dry run: clean ({len(stages)} stages), nothing submitted\n")
        return 0
    if opts.attached:
        return here(stages)
    from runners.pipeline.cluster_submit import submit_pipeline

    record = submit_pipeline(plan, stages, forced, out, secrets, err=opts.err)
    queued = sum(1 for e in record["stages"].values() if e["action"] == "submit")
    out.write(
        f"pipeline {plan.name}: {queued} of {len(stages)} stages queued\n"
        f"  status: python -m steps status {plan.root}\n"
        f"  logs:   python -m steps logs {plan.root}\n"
        f"  cancel: python -m steps cancel {plan.root}\n"
    )
    return 0
