"""`pipeline run --dry-run`: every selected stage planned as `run --dry-run` plans it, nothing
written; inputs not produced yet are checked by planned type, and a launch-only checkout is a
warning."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from catalog.errors import WARNING, Finding, StepsError
from runners.secrets import redact_text

# What only a launch needs -> its warning in a dry run (NeMo-RL: plan_run warns W-NEMO-RL-...).
LAUNCH_ONLY = {"E-MEGATRON-BRIDGE-NOT-FOUND": "W-MEGATRON-BRIDGE-NOT-FOUND"}


def _planned_missing(stage: Any) -> dict[str, Any]:
    """Inputs produced by earlier stages that do not exist yet (checked by type)."""
    return {p: b for p, b in stage.inputs.items() if b.producer and not os.path.exists(b.value)}


def _about(f: Finding, port_keys: list[str], value: str) -> bool:
    key = str(f.key or "")
    generic = ".".join(p for p in key.split(".") if not p.isdigit())
    if any(k in (key, generic) or key.startswith(k + ".") for k in port_keys):
        return True
    return bool(f.path) and str(f.path).startswith(value)


def _port_keys(stage: Any, port: str) -> list[str]:
    from catalog.tomlfile import load_toml

    data = load_toml(stage.step_dir / "step.toml")
    spec = next((p for p in data.get("consumes", []) if p.get("name") == port), {})
    return list(spec.get("config_keys", []))


def drop_pending(stage: Any, found: list[Finding]) -> list[Finding]:
    """`found` without the findings about inputs an earlier stage has not written yet."""
    pending = _planned_missing(stage)
    keys = {p: _port_keys(stage, p) for p in pending}
    return [f for f in found if not any(_about(f, keys[p], b.value) for p, b in pending.items())]


def stage_request(stage: Any, options: Any, overrides: list[str], **more: Any) -> Any:
    """The `runners.run.RunRequest` of `run STEP` for a stage, with its inputs and outputs."""
    from runners.run import RunRequest

    ports = [*stage.inputs.items(), *stage.outputs.items()]
    return RunRequest(
        step=stage.step,
        config=str(stage.config),
        overrides=overrides,
        input=[f"{p}={b.value}" for p, b in ports],
        nemo_rl=options.nemo_rl,
        catalog=list(options.catalog),
        **more,
    )


def stage_findings(stage: Any, options: Any, env: dict) -> tuple[list[Finding], int]:
    """What `run --dry-run` reports for the stage (launch-only gaps as warnings), and the exit code
    of an error that stopped it early (2: setup), else 0."""
    from runners.run import plan_run

    req = stage_request(stage, options, list(stage.overrides))
    try:
        plan = plan_run(req, cwd=Path.cwd(), env=env, argv=[])
    except StepsError as exc:
        return [exc.finding], exc.exit_code
    return [_launch_only(f) if f.code in LAUNCH_ONLY else f for f in plan.findings], 0


def _launch_only(f: Finding) -> Finding:
    """What only a launch needs, as its W- code: an E- code is never printed as a warning."""
    return replace(f, code=LAUNCH_ONLY[f.code], severity=WARNING)


def dry_run(plan: Any, options: Any, env: dict, secrets: dict[str, str]) -> int:
    """Check the stages a real run would run; 0 clean, 1 a stage's errors, 2 setup errors."""
    from runners.pipeline.selection import select

    worst, checked = 0, 0
    out = options.out
    consider, _ = select(plan, options)
    for i, stage in enumerate(plan.stages, 1):
        tag = " [inserted]" if stage.inserted else " [dry run]" if stage.dry_run else ""
        if stage.id not in consider:
            out.write(f"{i}. {stage.id} ({stage.step}){tag}: not selected\n")
            continue
        checked += 1
        out.write(f"{i}. {stage.id} ({stage.step}){tag}\n")
        pending = _planned_missing(stage)
        errors = warnings = 0
        found, code = stage_findings(stage, options, env)
        for f in drop_pending(stage, found):
            out.write(redact_text(f.render(indent="   "), secrets) + "\n")
            errors += f.is_error
            warnings += not f.is_error
        for p, b in pending.items():
            out.write(f"   input {p} <- {b.source}: not produced yet, planned {b.type}\n")
        if errors:
            worst = max(worst, code or 1)
        else:
            more = f" ({warnings} warning{'s' if warnings > 1 else ''} above)" if warnings else ""
            out.write(f"   preflight clean{more}\n")
    verdict = "clean" if worst == 0 else "problems found"
    of = f"{checked} of {len(plan.stages)}" if checked < len(plan.stages) else str(checked)
    out.write(f"dry run: {verdict} ({of} stages)\n")
    return worst
