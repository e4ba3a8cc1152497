"""`run`: resolve a step, compile its config, bind artifacts, preflight, then hand it over.

`plan_run` decides everything and writes nothing; `write_run_dir_for` writes the run dir that
would be handed over (a dry run only with --keep); `launch_local` execs into NeMo-RL (or
Megatron-Bridge) or runs rl_prep in-process; a cluster launch goes through `runners.launch`
(`submit`). The CLI (`steps/cli/run_cmd.py`) parses arguments and renders; nothing here prints
except the in-process rl_prep run.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.errors import WARNING, Finding, StepsError, has_errors


@dataclass
class RunRequest:
    """What the user asked for (the CLI's parsed arguments, without argparse)."""

    step: str | None = None
    config: str | None = None
    overrides: list[str] = field(default_factory=list)
    input: list[str] = field(default_factory=list)
    nemo_rl: str | None = None
    runs_dir: str | None = None
    catalog: list[str] = field(default_factory=list)
    force: bool = False
    launcher: str | None = None  # what starts NeMo-RL's script (`--launcher`, a profile's)
    launcher_from: str = "--launcher"
    chain: Any = None  # runners.chain.settings.ChainOptions for --until-done


@dataclass
class RunPlan:
    """Everything `run` decided before launching; `as_json()` is the `--json` output."""

    step_id: str
    version: str
    runner: str
    config_file: Path
    compiled: Any
    resolved_redacted: dict
    findings: list[Finding]
    command: list[str] | None
    cwd: Path | str | None
    run_dir: Path
    job_dir: str
    files: Any = None  # () -> {name: text}: rendered when the run dir is written
    materialize: Any = None
    env: dict[str, str] = field(default_factory=dict)
    resolved: dict = field(default_factory=dict)
    deferred: StepsError | None = None  # raised when launching (NeMo-RL not found)
    skip: str | None = None
    secrets: dict[str, str] = field(default_factory=dict)
    target: Any = None  # runners.launch.target.ClusterTarget for --run/--batch
    request: Any = None  # runners.launch.LaunchRequest for a cluster launch
    written: bool = False
    nemo_rl_version: str | None = None  # the NeMo-RL checked against and its schema, for people
    env_file: str | None = None  # the env.toml a --run/--batch profile came from
    chain: Any = None  # runners.chain.settings.ChainConfig for --until-done

    @property
    def ok(self) -> bool:
        return not has_errors(self.findings)

    def as_json(self) -> dict:
        out = {
            "step": self.step_id,
            "version": self.version,
            "ok": self.ok,
            "findings": [f.to_dict() for f in self.findings],
            "command": self.command,
            "cwd": str(self.cwd) if self.cwd else None,
            "run_dir": str(self.run_dir) if self.written else None,
            "config": self.resolved_redacted,
            "nemo_rl_version": self.nemo_rl_version,
        }
        if self.env_file is not None:
            out["env_file"] = self.env_file
        if self.target is not None:
            out["launch"] = self.target.describe(self.request)
        return out


def _entry_for_dir(step_dir: Path) -> Any:
    from catalog.discovery import MANIFEST, StepEntry
    from catalog.tomlfile import load_toml

    manifest = step_dir / MANIFEST
    if not manifest.is_file():
        raise StepsError("E-STEP-UNKNOWN", f"no {MANIFEST} in {step_dir}", exit_code=2)
    data = load_toml(manifest, code="E-MANIFEST-TOML")
    meta = data.get("step") if isinstance(data.get("step"), dict) else {}
    return StepEntry(str(meta.get("id") or step_dir.name), step_dir, step_dir.parent, data)


def entry_for(req: RunRequest, step_dir: Path | None = None) -> Any:
    """The step to run: a step folder (step.py) or an id resolved in the catalog."""
    if step_dir is not None:
        return _entry_for_dir(Path(step_dir).resolve())
    from catalog.discovery import discover, resolve

    return resolve(req.step or "", discover(req.catalog))


def _config_file(entry: Any, name: str | None, default: str, cwd: Path) -> Path:
    name = name or default
    looks_like_path = "/" in name or name.endswith((".yaml", ".yml")) or os.sep in name
    if not looks_like_path:
        path = entry.config_path(name)
        if not path.is_file():
            names = ", ".join(entry.config_names()) or "none"
            raise StepsError(
                "E-CONFIG-NOT-FOUND",
                f"step {entry.id} has no config '{name}'",
                path=str(entry.config_dir),
                fix=f"use one of: {names}, or a YAML path",
                exit_code=2,
            )
        return path
    return (cwd / Path(name).expanduser()).resolve()


def _inputs(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise StepsError(
                "E-INPUT-SYNTAX",
                f"--input '{pair}': expected NAME=PATH",
                fix="e.g. --input train=data/train.jsonl",
                exit_code=2,
            )
        out[name.strip()] = path
    return out


def _manifest(entry: Any) -> Any:
    from catalog.manifest import parse_manifest

    if entry.load_error is not None:
        f = entry.load_error
        raise StepsError(f.code, f.message, path=f.path, line=f.line, fix=f.fix, exit_code=2)
    manifest, problems = parse_manifest(entry.data, entry.manifest_path)
    if manifest is None:
        f = problems[0]
        more = (
            f" (and {len(problems) - 1} more; run `python -m steps check`)" if problems[1:] else ""
        )
        raise StepsError(f.code, f.message + more, path=f.path, line=f.line, fix=f.fix, exit_code=2)
    return manifest


def plan_run(
    req: Any,
    entry: Any = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
    target: Any = None,
) -> RunPlan:
    """Resolve, compile, bind and preflight; write nothing, launch nothing."""
    import yaml

    from runners.bind import _resolved, bind
    from runners.config.compiler import compile_config
    from runners.nemo_rl import checkout as nemo_rl
    from runners.preflight import PreflightContext, preflight
    from runners.rundir import plan_run_dir, run_record, runs_root, scrub_config
    from runners.secrets import redact, redact_override, secret_values

    cwd = cwd or Path.cwd()
    env = dict(os.environ if env is None else env)
    entry = entry if entry is not None else entry_for(req)
    manifest = _manifest(entry)
    runner = manifest.run.runner
    config_file = _config_file(entry, req.config, manifest.run.default_config, cwd)
    nrl = None  # the NeMo-RL that will run: it decides schema, overlays, rules, script names
    local_hint = target.local_checkout() if target is not None else None
    if runner == "nemo_rl":
        named = getattr(getattr(target, "profile", None), "nemo_rl_version", None)
        nrl = nemo_rl.resolve_target(req.nemo_rl or local_hint, env, named)
        compiled = nemo_rl.compile_for(nrl, manifest.run.algorithm, config_file, req.overrides)
    else:
        compiled = compile_config(config_file, list(req.overrides))
    from runners.config.env_pins import pin_env

    job_env = {**env, **(target.profile.env if target is not None else {})}
    env_pins = pin_env(compiled.config, job_env)  # the job resolves what preflight resolved

    checkout = script = None
    if nrl is not None:
        gym = _resolved(compiled.config, "env.should_use_nemo_gym") is True
        flag = {"env": {"should_use_nemo_gym": gym}}
        script = nemo_rl.choose_script(manifest.run, flag, nrl.version)
        checkout = nrl.with_script(script)
    elif runner == "dcp_to_hf":  # NeMo-RL's own converter, run from its checkout
        script = str(manifest.run.script)
        found = nemo_rl.locate_checkout(req.nemo_rl or local_hint, env)
        checkout = found if found is not None and (found / script).is_file() else None
    run_dir = plan_run_dir(runs_root(req.runs_dir, env, cwd), entry.id)
    job_dir = target.job_dir(entry.id, run_dir) if target is not None else str(run_dir)
    chain, chain_findings = None, []
    if getattr(req, "chain", None) is not None:  # --until-done: its keys set in the config
        from runners.chain.settings import plan_chain

        chain, chain_findings = plan_chain(req.chain, entry.id, runner, manifest, compiled, nrl,
                                           target, run_dir)  # fmt: skip
    graph = None
    try:
        from catalog.types import load_catalog_types

        graph = load_catalog_types(req.catalog)
    except StepsError:
        graph = None  # `check` reports a broken types file; binding falls back to exact names
    remote_checkout = target.nemo_rl_dir() if target is not None else None
    binding = bind(
        compiled,
        manifest,
        config_file=config_file,
        cwd=cwd,
        inputs=_inputs(req.input),
        run_dir=Path(job_dir),
        output_base=remote_checkout or checkout or cwd,
        graph=graph,
    )
    resolved = compiled.resolved()
    gym_root = None
    if checkout is not None:
        from catalog.upstream import GYM_SUBDIR

        gym_root = checkout / GYM_SUBDIR if (checkout / GYM_SUBDIR).is_dir() else None
    remote = local = None
    if target is not None:
        remote = target.probe(resolved, binding, script, job_dir)
    elif checkout is not None:
        from runners.launch.local import LocalLaunch, choose_launcher

        launcher = choose_launcher(checkout, req.launcher, env, req.launcher_from)
        local = LocalLaunch(launcher, checkout, nemo_rl.exec_env(checkout, env))
    ctx = PreflightContext(
        step_id=entry.id,
        manifest=manifest,
        config=resolved,
        config_file=config_file,
        inputs=binding.inputs,
        outputs=binding.outputs,
        nemo_rl_dir=checkout,
        gym_root=gym_root,
        run_dir=Path(job_dir),
        compiled=compiled,
        remote=remote,
        nemo_rl_version=nrl.version if nrl else None,
        local_launch=local,
    )
    findings = [*preflight(ctx), *chain_findings]

    command, command_cwd, deferred, skip = None, None, None, None
    config_path = f"{job_dir}/config.yaml"
    if target is not None:
        command, command_cwd = target.command(
            runner, entry.id, script, config_path, resolved, req.launcher
        )
    elif runner in ("nemo_rl", "dcp_to_hf"):
        if checkout is None:
            deferred = nemo_rl.not_found(script, req.nemo_rl, env)
            findings.append(
                Finding(
                    "W-NEMO-RL-NOT-FOUND",
                    deferred.finding.message + " (checked everything else; launching needs it)",
                    fix=deferred.finding.fix,
                    severity=WARNING,
                )
            )
        elif runner == "dcp_to_hf":
            from runners.nemo_rl import dcp_export

            command, more, skip = dcp_export.plan(resolved, local.command, script, req.force)
            command_cwd, findings = checkout, [*findings, *more]
        else:
            command = local.command(script, config_path)
            command_cwd = checkout
    elif runner == "megatron_to_hf":
        from runners import convert

        command, command_cwd, more, skip = convert.plan(resolved, req.force)
        findings = [*findings, *more]
    else:
        command_cwd = cwd
    findings = sorted(findings, key=lambda f: (not f.is_error,))

    values = secret_values(env)
    extra_env = scrub_config(compiled.config, values)
    redacted = redact(resolved, values)

    def record() -> str:
        """run.json, with the findings the plan ends with (the launch's refusals included)."""
        return run_record(
            step_id=entry.id,
            version=manifest.step.version,
            argv=[redact_override(t, values) for t in (argv if argv is not None else sys.argv)],
            cwd=cwd,
            sources=compiled.sources,
            env_names=[*env, *extra_env],
            inputs=binding.inputs,
            outputs=binding.outputs,
            findings=plan.findings,
            command=command,
            command_cwd=command_cwd,
            nemo_rl_dir=remote_checkout or checkout,
            values=values,
            launch=target.record() if target is not None else None,
            nemo_rl_version=nrl.version.to_dict() if nrl and nrl.version else None,
            config_env=env_pins,
        )

    def files() -> dict[str, str]:
        """The run dir's files, rendered only when it is written (a dry run skips the dumps)."""
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return {
            "config.yaml": compiled.to_yaml(),
            "resolved.yaml": yaml.dump(
                redacted, Dumper=dumper, sort_keys=False, allow_unicode=True
            ),
            "run.json": record(),
        }

    run_env = nemo_rl.exec_env(checkout, env, extra_env) if checkout else {**env, **extra_env}
    plan = RunPlan(
        step_id=entry.id,
        version=manifest.step.version,
        runner=runner,
        config_file=config_file,
        compiled=compiled,
        resolved_redacted=redacted,
        findings=findings,
        command=command,
        cwd=command_cwd,
        run_dir=run_dir,
        job_dir=job_dir,
        files=files,
        materialize=binding.materialize,
        env=run_env,
        resolved=resolved,
        deferred=deferred,
        skip=skip,
        secrets=values,
        target=target,
        nemo_rl_version=nrl.describe(manifest.run.algorithm) if nrl else None,
        chain=chain,
    )
    if target is not None:  # what the submit would refuse is a finding now, dry run or not
        plan.request = target.request(plan, extra_env)
        if chain is not None:
            from runners.chain.submit import configure, refuse_busy

            configure(plan.request, target)
            refuse_busy(plan, target)
        refused = target.backend.refusals(plan.request, plan.files)
        plan.findings = sorted([*plan.findings, *refused], key=lambda f: (not f.is_error,))
    return plan


def write_run_dir_for(plan: RunPlan) -> Path:
    """Write the run dir whole (derived data only when preflight is clean)."""
    from runners.rundir import write_run_dir

    materialize = plan.materialize if plan.ok else None
    write_run_dir(plan.run_dir, plan.files(), materialize)
    plan.written = True
    return plan.run_dir


def launch_local(plan: RunPlan, force: bool = False) -> dict | None:
    """Exec (never returns) or run rl_prep in-process (returns its summary)."""
    if plan.deferred is not None:
        raise plan.deferred
    if plan.skip:
        return None
    if plan.runner == "rl_prep":
        from runners.rl_prep import run_step

        return run_step(plan.resolved, config_dir=plan.config_file.parent, force=force)
    from runners.nemo_rl.checkout import exec_command

    if plan.runner == "megatron_to_hf":
        from runners.convert import require_bridge

        require_bridge(plan.findings)
    exec_command(plan.command, Path(plan.cwd), plan.env)
    return None  # pragma: no cover - exec does not return
