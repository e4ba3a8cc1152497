"""`run`: resolve a step, compile its config, bind artifacts, preflight, then hand it over.

`plan_run` decides everything and writes nothing, the same pipeline for every runner kind;
`write_run_dir_for` writes the run dir; `launch_local` hands over as the kind does (exec, or
in-process). Nothing here prints: the CLI (`steps/cli/run_cmd.py`) renders.

Owns: `plan` (`RunRequest`, `RunPlan`, the run dir's files), `step` (which step, config file,
inputs), `outputs` (registry and W&B), `cluster` (a run handed to a cluster), `execute`
(the plan carried out, as events), `job_view` (a launched run as the job commands see it),
`judge` (the upstream judge's CPU job before a cluster's GPU job).
May import: `runners.kinds`, `runners.bind`, `runners.chain`, `runners.preflight`,
`runners.launch`, `runners.monitor`, `runners.nemo_rl`, `runners.config`, `runners.artifacts`,
`runners.rundir`, `runners.secrets`, catalog.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from catalog.errors import Finding, StepsError
from runners.run.outputs import (
    record_outputs,
    record_pending,
    registry_findings,
    wandb_findings,
    wandb_settings,
)
from runners.run.plan import RunPlan, RunRequest

__all__ = [
    "RunPlan",
    "RunRequest",
    "launch_local",
    "plan_run",
    "record_outputs",
    "record_pending",
    "wandb_settings",
    "write_run_dir_for",
]

if TYPE_CHECKING:
    from catalog.discovery import StepEntry
    from runners.bind import Binding
    from runners.kinds.base import Command, Prepared, RunnerKind, Setting
    from runners.launch.target import ClusterTarget
    from runners.preflight import PreflightContext


def plan_run(
    req: RunRequest,
    entry: StepEntry | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
    target: ClusterTarget | None = None,
) -> RunPlan:
    """Resolve, compile, bind and preflight; write nothing, launch nothing."""
    from runners.chain.settings import plan_chain
    from runners.kinds import kind_for
    from runners.kinds.base import Setting
    from runners.preflight import preflight
    from runners.run.step import config_file_for, entry_for, manifest_of
    from runners.rundir import plan_run_dir, registry_root, runs_root

    cwd = cwd or Path.cwd()
    env = dict(os.environ if env is None else env)
    entry = entry if entry is not None else entry_for(req)
    manifest = manifest_of(entry)
    kind = kind_for(manifest.run.runner)
    config_file = config_file_for(entry, req.config, manifest.run.default_config, cwd)
    s = Setting(entry.id, manifest, config_file, list(req.overrides), env, cwd, req.nemo_rl,
                req.launcher, req.force, target, entry.config_dir)  # fmt: skip
    prepared, typos = _prepare(kind, s)
    run_dir = plan_run_dir(runs_root(req.runs_dir, env, cwd), entry.id)
    job_dir = target.job_dir(entry.id, run_dir) if target is not None else str(run_dir)
    chain, chain_findings = plan_chain(req.chain, s, kind.can_chain, prepared, run_dir)
    binding = _bind(req, s, kind, prepared, job_dir)
    resolved = prepared.compiled.resolved()
    ctx = _context(req, s, prepared, binding, resolved, job_dir, kind.ray_program)
    ctx.has = frozenset(getattr(kind, "has", ()))  # a kind that says nothing: `check` fails it
    config_path = f"{job_dir}/config.yaml"
    if target is not None:
        command = _job_command(kind, s, prepared, resolved, config_path)
    else:
        command = kind.local_command(s, prepared, resolved, ctx.local_launch, config_path)
    env_file = str(target.env_file) if target is not None else None
    unreached = [ctx.remote.unreached] if ctx.remote and ctx.remote.unreached else []
    findings = [*typos, *unreached, *preflight(ctx), *chain_findings, *command.findings,
                *registry_findings(registry_root(req.runs_dir, env, cwd), manifest),
                *(wandb_findings(env_file, env, cwd) if manifest.produces else [])]  # fmt: skip
    findings = list(dict.fromkeys(findings))  # one input bound to two ports: one finding
    plan = _plan(s, kind, prepared, binding, resolved, command, findings, run_dir, job_dir, argv)
    plan.chain = chain
    plan.refusal_code = 2 if typos or unreached else 1  # an override not taken, no host: setup
    if target is not None:  # what the submit would refuse is a finding now, dry run or not
        plan.request = target.request(plan, plan.extra_env)
        if not kind.needs_gpus:  # a CPU-only job asks for no GPU
            plan.request.gpus_per_node = 0
        if chain is not None:
            from runners.chain.submit import configure, refuse_busy

            configure(plan.request, target)
            refuse_busy(plan, target)
        refused = target.backend.refusals(plan.request, plan.files)
        plan.findings = _ordered([*plan.findings, *refused])
        from runners.run.judge import describe, plan_judge

        launcher = req.launcher or target.profile.launcher
        plan.judge, note = plan_judge(plan, target, req.upstream_judge, launcher)
        plan.judge_view = describe(plan.judge, note, target)
    return plan


def _job_command(
    kind: RunnerKind, s: Setting, prepared: Prepared, resolved: dict, config: str
) -> Command:
    """The cluster job's command; E-PROFILE (no nemo_rl_dir) as one finding among the others."""
    from runners.kinds.base import Command

    try:
        return Command(*kind.job_command(s, prepared, resolved, config))
    except StepsError as exc:
        return Command(findings=[exc.finding])


def _prepare(kind: RunnerKind, s: Setting) -> tuple[Prepared, list[Finding]]:
    """The kind's compile; an override it cannot take becomes a finding (one typo hides none)."""
    from dataclasses import replace

    from runners.config.overrides import OverrideError

    bad: list[Finding] = []
    overrides = list(s.overrides)
    while True:
        try:
            prepared = kind.prepare(replace(s, overrides=overrides) if bad else s)
        except OverrideError as exc:
            if exc.token not in overrides:
                raise
            overrides.remove(exc.token)
            bad.append(exc.finding)
            continue
        return prepared, bad


def _ordered(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (not f.is_error,))


def _bind(
    req: RunRequest, s: Setting, kind: RunnerKind, prepared: Prepared, job_dir: str
) -> Binding:
    """Every port bound (paths as the job sees them; derived files planned); `--input
    PORT=NAME[:ALIAS|:vN]` resolved to a registered (or W&B) artifact's path."""
    from catalog.types import load_catalog_types
    from runners.artifacts.resolve import resolve_inputs
    from runners.bind import bind
    from runners.run.step import parse_inputs
    from runners.rundir import registry_root

    try:
        graph = load_catalog_types(req.catalog)
    except StepsError:
        graph = None  # `check` reports a broken types file; binding falls back to exact names
    remote_checkout = s.target.nemo_rl_dir() if s.target is not None else None
    root = registry_root(req.runs_dir, s.env, s.cwd)
    wandb = lambda: wandb_settings(prepared.compiled.resolved(), None, s.env, s.cwd)  # noqa: E731
    types = {p.name: p.type for p in [*s.manifest.consumes, *s.manifest.produces]}
    inputs = resolve_inputs(parse_inputs(req.input), types, root, s.cwd, graph, wandb)[0]
    workdir = remote_checkout if s.target is not None else prepared.checkout  # NeMo-RL's cwd
    return bind(
        prepared.compiled,
        s.manifest,
        config_file=s.config_file,
        cwd=s.cwd,
        inputs=inputs,
        run_dir=Path(job_dir),
        output_base=remote_checkout or prepared.checkout or s.cwd,
        graph=graph,
        workdir=str(workdir) if workdir else None,
        opens_from_workdir=kind.compiles_with_nemo_rl,
        pending=frozenset(req.pending),
    )


def _context(
    req: RunRequest,
    s: Setting,
    prepared: Prepared,
    binding: Binding,
    resolved: dict,
    job_dir: str,
    ray_program: bool,
) -> PreflightContext:
    """What the rules see: the config, the artifacts, where it runs (probe or local launcher)."""
    from runners.preflight import PreflightContext

    checkout = prepared.checkout
    gym_root = remote = local = None
    source = checkout
    if source is None and prepared.nrl is None:  # runs no NeMo-RL (rl_prep: its agents' Gym)
        from runners.nemo_rl.checkout import locate_checkout

        source = locate_checkout(s.nemo_rl_hint, s.env)
    if source is not None:
        from catalog.upstream import GYM_SUBDIR

        gym_root = source / GYM_SUBDIR if (source / GYM_SUBDIR).is_dir() else None
    if s.target is not None:
        remote = s.target.probe(resolved, binding, prepared.script, job_dir, ray_program)
    elif checkout is not None:
        from runners.launch.local import LocalLaunch, choose_launcher
        from runners.nemo_rl.checkout import exec_env

        launcher = choose_launcher(checkout, req.launcher, s.env, req.launcher_from)
        local = LocalLaunch(launcher, checkout, exec_env(checkout, s.env))
    return PreflightContext(
        step_id=s.step_id,
        manifest=s.manifest,
        config=resolved,
        config_file=s.config_file,
        inputs=binding.inputs,
        outputs=binding.outputs,
        nemo_rl_dir=checkout,
        gym_root=gym_root,
        run_dir=Path(job_dir),
        compiled=prepared.compiled,
        remote=remote,
        nemo_rl_version=prepared.nrl.version if prepared.nrl else None,
        local_launch=local,
    )


def _plan(
    s: Setting,
    kind: RunnerKind,
    prepared: Prepared,
    binding: Binding,
    resolved: dict,
    command: Command,
    findings: list[Finding],
    run_dir: Path,
    job_dir: str,
    argv: list[str] | None,
) -> RunPlan:
    """The plan, with its secrets lifted out and its run dir's files ready to render."""
    from runners.config.env_pins import pin_env
    from runners.nemo_rl.checkout import exec_env
    from runners.run.plan import RunFiles
    from runners.rundir import scrub_config
    from runners.secrets import redact, secret_values

    env, compiled, checkout = s.env, prepared.compiled, prepared.checkout
    job_env = {**env, **(s.target.profile.env if s.target is not None else {})}
    env_pins = pin_env(compiled.config, job_env)  # the job resolves what preflight resolved
    values = secret_values(env)
    extra_env = scrub_config(compiled.config, values)
    nrl = prepared.nrl
    plan = RunPlan(
        step_id=s.step_id,
        version=s.manifest.step.version,
        runner=kind.name,
        kind=kind,
        config_file=s.config_file,
        compiled=compiled,
        resolved_redacted=redact(resolved, values),
        findings=_ordered(findings),
        command=command.argv,
        cwd=command.cwd,
        run_dir=run_dir,
        job_dir=job_dir,
        materialize=binding.materialize,
        env=exec_env(checkout, env, extra_env) if checkout else {**env, **extra_env},
        resolved=resolved,
        deferred=command.deferred,
        skip=command.skip,
        secrets=values,
        target=s.target,
        nemo_rl_version=nrl.describe(s.manifest.run.algorithm) if nrl else None,
        extra_env=extra_env,
    )
    plan.files = RunFiles(
        plan,
        binding,
        env_pins,
        argv if argv is not None else sys.argv,
        s.cwd,
        env_names=[*env, *extra_env],
        nemo_rl_dir=(s.target.nemo_rl_dir() if s.target is not None else None) or checkout,
        nemo_rl_version=nrl.version.to_dict() if nrl and nrl.version else None,
    )
    return plan


def write_run_dir_for(plan: RunPlan) -> Path:
    """Write the run dir whole (derived data only when preflight is clean)."""
    from runners.rundir import write_run_dir

    materialize = plan.materialize if plan.ok else None
    assert plan.files is not None  # set by the plan
    write_run_dir(plan.run_dir, plan.files(), materialize)
    plan.written = True
    return plan.run_dir


def launch_local(plan: RunPlan, force: bool = False) -> dict | None:
    """Exec (never returns) or run in-process (its summary, with "artifacts" registered), as
    the kind does; the caller records an exec's pending outputs first (`record_pending`)."""
    from runners.kinds.base import LocalRun

    if plan.deferred is not None:
        raise plan.deferred
    if plan.skip:
        return None
    run = LocalRun(plan.command, plan.cwd, plan.env, plan.resolved, plan.config_file.parent,
                   plan.findings, force)  # fmt: skip
    summary = plan.kind.launch(run)
    if isinstance(summary, dict) and plan.written:
        summary["artifacts"] = record_outputs(plan)
    return summary
