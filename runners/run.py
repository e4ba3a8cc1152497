"""`run`: resolve a step, compile its config, bind artifacts, preflight, write the run dir, launch.

`plan_run` does everything but launch and is what tests and `--dry-run` use; `launch` execs into
NeMo-RL (or Megatron-Bridge) or runs rl_prep in-process. `main(step_dir, argv)` is what each
step folder's `step.py` calls.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.errors import Finding, StepsError, has_errors

NO_TRACEBACK_HINT = "run `python -m steps list` to see the steps"


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options `run` and every `step.py` share (the step id is added by the caller)."""
    parser.add_argument(
        "-c",
        "--config",
        metavar="NAME|PATH",
        help="config name in the step's config/ folder, or a YAML path "
        "(default: [run].default_config)",
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="bind an artifact port (consumes or produces) to a path; "
        "an rl_prep output folder or manifest.json binds train and val",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="do everything except launch; print config, findings and command",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object (dry-run)")
    parser.add_argument(
        "--nemo-rl", metavar="DIR", help="NeMo-RL checkout (else $NEMO_RL_HOME, else /opt/nemo-rl)"
    )
    parser.add_argument(
        "--runs-dir",
        metavar="DIR",
        help="root of run directories (else $STEPS_RUNS_DIR, else ./runs)",
    )
    parser.add_argument(
        "--catalog",
        action="append",
        default=[],
        metavar="DIR",
        help="extra catalog root with step folders (repeatable)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="redo work whose output already exists (conversion, data prep)",
    )


def parse(argv: list[str], with_step: bool) -> argparse.Namespace:
    """Options may come before, between or after the overrides."""
    parser = argparse.ArgumentParser(prog="step.py" if not with_step else "python -m steps run")
    if with_step:
        parser.add_argument("step")
    add_options(parser)
    parser.add_argument("overrides", nargs="*", help="key=v, +key=v, ++key=v, ~key")
    return parser.parse_intermixed_args(argv)


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
    cwd: Path | None
    run_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    resolved: dict = field(default_factory=dict)
    deferred: StepsError | None = None  # raised after printing (NeMo-RL not found)
    skip: str | None = None
    secrets: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.findings)

    def as_json(self) -> dict:
        return {
            "step": self.step_id,
            "config": self.resolved_redacted,
            "findings": [f.to_dict() for f in self.findings],
            "command": self.command,
            "cwd": str(self.cwd) if self.cwd else None,
            "run_dir": str(self.run_dir),
        }


def _entry_for_dir(step_dir: Path):
    from catalog.discovery import MANIFEST, StepEntry
    from catalog.tomlfile import load_toml

    manifest = step_dir / MANIFEST
    if not manifest.is_file():
        raise StepsError("E-STEP-UNKNOWN", f"no {MANIFEST} in {step_dir}", exit_code=2)
    data = load_toml(manifest, code="E-MANIFEST-TOML")
    meta = data.get("step") if isinstance(data.get("step"), dict) else {}
    return StepEntry(str(meta.get("id") or step_dir.name), step_dir, step_dir.parent, data)


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


def plan_run(
    args: argparse.Namespace,
    entry: Any = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
) -> RunPlan:
    """Resolve, compile, bind, preflight and write the run dir; launch nothing."""
    import yaml

    from catalog.manifest import parse_manifest
    from runners import nemo_rl
    from runners.bind import _resolved, bind
    from runners.config import compile_config
    from runners.preflight import PreflightContext, preflight
    from runners.rundir import plan_run_dir, run_record, runs_root, scrub_config, write_run_dir
    from runners.secrets import redact, redact_override, secret_values

    cwd = cwd or Path.cwd()
    env = dict(os.environ if env is None else env)
    if entry is None:
        from catalog.discovery import discover, resolve

        entry = resolve(args.step, discover(args.catalog))
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
    runner = manifest.run.runner
    config_file = _config_file(entry, args.config, manifest.run.default_config, cwd)
    compiled = compile_config(config_file, list(args.overrides))

    checkout = script = None
    if runner == "nemo_rl":
        gym = _resolved(compiled.config, "env.should_use_nemo_gym") is True
        script = nemo_rl.choose_script(manifest.run, {"env": {"should_use_nemo_gym": gym}})
        checkout = nemo_rl.locate(script, args.nemo_rl, env)
    run_dir = plan_run_dir(runs_root(args.runs_dir, env, cwd), entry.id, compiled.to_yaml())
    graph = None
    try:
        from catalog.types import load_catalog_types

        graph = load_catalog_types(args.catalog)
    except StepsError:
        graph = None  # `check` reports a broken types file; binding falls back to exact names
    binding = bind(
        compiled,
        manifest,
        config_file=config_file,
        cwd=cwd,
        inputs=_inputs(args.input),
        run_dir=run_dir,
        output_base=checkout or cwd,
        graph=graph,
    )
    resolved = compiled.resolved()
    gym_root = None
    if checkout is not None:
        from catalog.upstream import GYM_SUBDIR

        gym_root = checkout / GYM_SUBDIR if (checkout / GYM_SUBDIR).is_dir() else None
    ctx = PreflightContext(
        step_id=entry.id,
        manifest=manifest,
        config=resolved,
        config_file=config_file,
        inputs=binding.inputs,
        outputs=binding.outputs,
        nemo_rl_dir=checkout,
        gym_root=gym_root,
        run_dir=run_dir,
        compiled=compiled,
    )
    findings = preflight(ctx)

    command, command_cwd, deferred, skip = None, None, None, None
    config_path = run_dir / "config.yaml"
    if runner == "nemo_rl":
        if checkout is None:
            deferred = nemo_rl.not_found(script, args.nemo_rl, env)
        else:
            command, command_cwd = (
                nemo_rl.build_command(checkout, script, config_path, env),
                checkout,
            )
    elif runner == "megatron_to_hf":
        from runners import convert

        command, command_cwd, more, skip = convert.plan(resolved, args.force)
        findings = sorted([*findings, *more], key=lambda f: (not f.is_error,))
    else:
        command_cwd = cwd

    values = secret_values(env)
    extra_env = scrub_config(compiled.config, values)
    redacted = redact(resolved, values)
    record = run_record(
        step_id=entry.id,
        version=manifest.step.version,
        argv=[redact_override(t, values) for t in (argv if argv is not None else sys.argv)],
        cwd=cwd,
        sources=compiled.sources,
        env_names=[*env, *extra_env],
        inputs=binding.inputs,
        outputs=binding.outputs,
        findings=findings,
        command=command,
        command_cwd=command_cwd,
        nemo_rl_dir=checkout,
        values=values,
    )
    files = {
        "config.yaml": compiled.to_yaml(),
        "resolved.yaml": yaml.safe_dump(redacted, sort_keys=False, allow_unicode=True),
        "run.json": record,
    }
    materialize = binding.materialize if not has_errors(findings) else None
    write_run_dir(run_dir, files, materialize)
    run_env = nemo_rl.exec_env(checkout, env, extra_env) if checkout else {**env, **extra_env}
    return RunPlan(
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
        env=run_env,
        resolved=resolved,
        deferred=deferred,
        skip=skip,
        secrets=values,
    )


def _print_plan(plan: RunPlan, as_json: bool, dry_run: bool) -> None:
    import json
    import shlex

    import yaml

    from runners.secrets import redact_text

    if as_json:
        text = json.dumps(plan.as_json(), indent=2, default=str)
        print(redact_text(text, plan.secrets))
        return
    out = sys.stdout if dry_run else sys.stderr
    lines = [f"step: {plan.step_id} {plan.version}", f"config: {plan.config_file}"]
    if dry_run:
        body = yaml.safe_dump(plan.resolved_redacted, sort_keys=False, allow_unicode=True)
        lines += ["--- resolved config (secrets redacted) ---", body.rstrip()]
    lines.append("--- findings ---")
    lines += [f.render() for f in plan.findings] or ["none"]
    lines.append("--- command ---")
    if plan.skip:
        lines.append(plan.skip)
    elif plan.command:
        lines += [f"cwd: {plan.cwd}", f"argv: {shlex.join(plan.command)}"]
    elif plan.runner == "rl_prep":
        lines.append(f"in-process: runners.rl_prep.run_step (cwd {plan.cwd})")
    else:
        lines.append("none (see the error below)")
    lines.append(f"run dir: {plan.run_dir}")
    print(redact_text("\n".join(lines), plan.secrets), file=out)


def launch(plan: RunPlan, force: bool = False) -> int:
    """Exec (never returns) or run rl_prep in-process; preflight errors stop here with exit 1."""
    if plan.deferred is not None:
        raise plan.deferred
    if not plan.ok:
        print(f"preflight failed: fix the errors above (run dir {plan.run_dir})", file=sys.stderr)
        return 1
    if plan.skip:
        return 0
    if plan.runner == "rl_prep":
        import json

        from runners.rl_prep import run_step

        summary = run_step(plan.resolved, config_dir=plan.config_file.parent, force=force)
        print(json.dumps(summary, indent=2, default=str))
        return 0
    from runners.nemo_rl import exec_command

    if plan.runner == "megatron_to_hf":
        from runners.convert import require_bridge

        require_bridge(plan.findings)
    exec_command(plan.command, plan.cwd, plan.env)
    return 0  # pragma: no cover - exec does not return


def run(args: argparse.Namespace, entry: Any = None, argv: list[str] | None = None) -> int:
    """Plan, print, and launch unless `--dry-run`; exit 0 clean, 1 preflight errors, 2 setup."""
    plan = plan_run(args, entry=entry, argv=argv)
    _print_plan(plan, args.json, args.dry_run)
    if args.dry_run:
        if plan.deferred is not None:
            raise plan.deferred
        return 0 if plan.ok else 1
    return launch(plan, args.force)


def main(step_dir: Path, argv: list[str]) -> int:
    """Entry point of a step folder's `step.py`: the `run` flags without the step id."""
    try:
        args = parse(list(argv), with_step=False)
        return run(args, entry=_entry_for_dir(Path(step_dir).resolve()), argv=list(argv))
    except StepsError as exc:
        print(exc.finding.render(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
