"""The run dir's files of a plan: config.yaml, resolved.yaml (redacted) and run.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runners.bind import Binding
    from runners.run.plan import RunPlan


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
