"""The records `run` hands across floors: what the user asked (`RunRequest`), what was decided
before launching (`RunPlan`, whose `as_json()` is the `--json` output) and its run dir's files."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from catalog.errors import Finding, StepsError, has_errors

if TYPE_CHECKING:
    from runners.bind import Binding
    from runners.chain.settings import ChainConfig, ChainOptions
    from runners.config.compiler import CompiledConfig
    from runners.kinds.base import RunnerKind
    from runners.launch.request import LaunchRequest
    from runners.launch.target import ClusterTarget


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
    chain: ChainOptions | None = None  # --until-done
    pending: list[str] = field(default_factory=list)  # inputs a pipeline's earlier stage writes
    upstream_judge: bool = True  # on a cluster: NeMo-RL's judge as a CPU job first (run/judge.py)


@dataclass
class RunPlan:
    """Everything `run` decided before launching; `as_json()` is the `--json` output."""

    step_id: str
    version: str
    runner: str  # the kind's name (step.toml run.runner)
    kind: RunnerKind
    config_file: Path
    compiled: CompiledConfig
    resolved_redacted: dict
    findings: list[Finding]
    command: list[str] | None
    cwd: Path | str | None
    run_dir: Path
    job_dir: str
    files: Callable[[], dict[str, str]] | None = None  # rendered when the run dir is written
    materialize: Callable[[Path], None] | None = None  # derived data, into the run dir
    env: dict[str, str] = field(default_factory=dict)
    resolved: dict = field(default_factory=dict)
    deferred: StepsError | None = None  # raised when launching (NeMo-RL not found)
    skip: str | None = None
    secrets: dict[str, str] = field(default_factory=dict)
    target: ClusterTarget | None = None  # --run/--batch
    request: LaunchRequest | None = None  # the cluster launch
    judge: LaunchRequest | None = None  # the upstream judge's CPU job before it (run/judge.py)
    judge_view: dict = field(default_factory=dict)  # what the dry run says of it (or why none)
    written: bool = False
    nemo_rl_version: str | None = None  # the NeMo-RL checked against and its schema, for people
    env_file: str | None = None  # the env.toml a --run/--batch profile came from
    chain: ChainConfig | None = None  # --until-done
    extra_env: dict[str, str] = field(default_factory=dict)  # literal secrets lifted out
    refusal_code: int = 1  # the exit code when refused: 2 when an override was not taken

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
            out["launch"] = self.launch_view()
        return out

    def launch_view(self) -> dict:
        """How the job would be submitted (a dry run shows it), with the upstream judge's."""
        assert self.target is not None
        launch = self.target.describe(self.request)
        if self.judge_view:
            launch["upstream_judge"] = self.judge_view
        return launch


@dataclass
class RunFiles:
    """The run dir's files, rendered only when it is written (a dry run skips the dumps)."""

    plan: RunPlan
    binding: Binding
    env_pins: dict[str, dict[str, str]]  # variable -> {value, source}, pinned into config.yaml
    argv: list[str]
    cwd: Path
    env_names: list[str]
    nemo_rl_dir: Path | None
    nemo_rl_version: dict | None

    def __call__(self) -> dict[str, str]:
        import yaml

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        resolved = yaml.dump(
            self.plan.resolved_redacted, Dumper=dumper, sort_keys=False, allow_unicode=True
        )
        return {
            "config.yaml": self.plan.compiled.to_yaml(),
            "resolved.yaml": resolved,
            "run.json": self.record(),
        }

    def record(self) -> str:
        """run.json, with the findings the plan ends with (the launch's refusals included)."""
        from runners.rundir import run_record
        from runners.secrets import redact_override

        plan, values = self.plan, self.plan.secrets
        return run_record(
            step_id=plan.step_id,
            version=plan.version,
            argv=[redact_override(t, values) for t in self.argv],
            cwd=self.cwd,
            sources=plan.compiled.sources,
            env_names=self.env_names,
            inputs=self.binding.inputs,
            outputs=self.binding.outputs,
            findings=plan.findings,
            command=plan.command,
            command_cwd=plan.cwd,
            nemo_rl_dir=self.nemo_rl_dir,
            values=values,
            launch=plan.target.record() if plan.target is not None else None,
            nemo_rl_version=self.nemo_rl_version,
            config_env=self.env_pins,
        )
