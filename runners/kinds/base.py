"""What every runner kind answers, with the defaults the kinds share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from catalog.errors import Finding, StepsError

if TYPE_CHECKING:
    from catalog.manifest import StepManifest
    from runners.config.compiler import CompiledConfig
    from runners.launch.local import LocalLaunch
    from runners.launch.profiles.env_toml import RayProfile, SlurmProfile
    from runners.launch.target import ClusterTarget
    from runners.nemo_rl.checkout import Target


@dataclass
class Setting:
    """What a kind is asked about: the user's overrides and NeMo-RL choice, the step, where."""

    step_id: str
    manifest: StepManifest
    config_file: Path
    overrides: list[str]
    env: dict[str, str]
    cwd: Path
    nemo_rl: str | None = None  # --nemo-rl
    launcher: str | None = None  # --launcher (or a profile's)
    force: bool = False
    target: ClusterTarget | None = None
    config_home: Path | None = None  # the step's config/ folder: bare `defaults: NAME` there

    @property
    def nemo_rl_hint(self) -> str | None:
        """--nemo-rl, else the profile's checkout when this machine sees it."""
        if self.nemo_rl:
            return self.nemo_rl
        return self.target.local_checkout() if self.target is not None else None


@dataclass
class Prepared:
    """A kind's compiled config and, for NeMo-RL's programs, the checkout that will run it."""

    compiled: CompiledConfig
    nrl: Target | None = None  # the NeMo-RL checked against (schema, overlays, rules)
    checkout: Path | None = None  # the checkout holding `script`, when found here
    script: str | None = None


@dataclass
class Command:
    """What a local run does: argv and cwd, or in-process (argv None), or nothing (skip)."""

    argv: list[str] | None = None
    cwd: Path | str | None = None
    findings: list[Finding] = field(default_factory=list)
    skip: str | None = None  # why nothing runs (the output is there already)
    deferred: StepsError | None = None  # raised at launch (NeMo-RL not found here)


# What a preflight rule may need of a step's kind (`rule(needs=...)`); a rule that needs nothing
# applies to every kind, a new one included.
CAPABILITIES: dict[str, str] = {
    "nemo_rl_config": "its config is NeMo-RL's MasterConfig, run by a NeMo-RL example script",
    "rl_prep_blend": "its config is an rl_prep blend with rl_prep's options",
    "dcp_export": "it exports a NeMo-RL DCP checkpoint with NeMo-RL's own converter",
    "megatron_bridge": "it converts a Megatron checkpoint with Megatron-Bridge",
}


class RunnerKind:
    """A kind's defaults: compiled alone, exec'd locally, one node in a plain job."""

    name: ClassVar[str]
    has: ClassVar[frozenset[str]]  # no default: every kind says which CAPABILITIES it has
    ray_program: ClassVar[bool] = False  # a Ray driver: ray.sub on Slurm, the Ray cluster's GPUs
    can_chain: ClassVar[bool] = False  # --until-done: trained to the end across segments
    compiles_with_nemo_rl: ClassVar[bool] = False  # the config depends on the checkout
    in_process: ClassVar[str | None] = None  # what runs in this process, for people
    needs_gpus: ClassVar[bool] = True  # False: a cluster job asks for no GPU (--gres)
    runs_our_code: ClassVar[bool] = False  # a cluster job runs steps: its run dir carries a copy

    def prepare(self, s: Setting) -> Prepared:
        from runners.config.compiler import compile_config

        return Prepared(compile_config(s.config_file, list(s.overrides), s.config_home))

    def local_command(
        self, s: Setting, p: Prepared, resolved: dict, local: LocalLaunch | None, config: str
    ) -> Command:
        return Command(cwd=s.cwd)

    def job_command(
        self, s: Setting, p: Prepared, resolved: dict, config: str
    ) -> tuple[list[str], str]:
        raise NotImplementedError(f"{self.name} has no cluster command")

    def nodes(self, resolved: Mapping[str, Any], profile: SlurmProfile | RayProfile) -> int:
        return getattr(profile, "nodes", None) or 1

    def launch(self, run: LocalRun) -> dict | None:
        """Exec into the command (never returns); an in-process kind returns its summary."""
        from runners.nemo_rl.checkout import exec_command

        exec_command(list(run.argv or []), Path(str(run.cwd)), run.env)
        return None  # pragma: no cover - exec does not return


@dataclass
class LocalRun:
    """What a local launch hands over: the planned command and what an in-process kind reads."""

    argv: list[str] | None
    cwd: Path | str | None
    env: Mapping[str, str]
    resolved: dict
    config_dir: Path
    findings: list[Finding]
    force: bool = False


def not_found(s: Setting, script: str) -> Command:
    """No checkout here holds `script`: everything else is checked, launching needs it."""
    from catalog.errors import WARNING
    from runners.nemo_rl.checkout import not_found as missing

    deferred = missing(script, s.nemo_rl, s.env)
    warning = Finding(
        "W-NEMO-RL-NOT-FOUND",
        deferred.finding.message + " (checked everything else; launching needs it)",
        fix=deferred.finding.fix,
        severity=WARNING,
    )
    return Command(findings=[warning], deferred=deferred)


def cluster_checkout(s: Setting) -> tuple[str, str]:
    """The profile's NeMo-RL checkout as the job sees it, and the launcher to start its script."""
    target = s.target
    assert target is not None
    if not target.profile.nemo_rl_dir:
        raise StepsError(
            "E-PROFILE",
            f"profile [{target.name}] has no nemo_rl_dir: the cluster's NeMo-RL checkout "
            "is needed to run a NeMo-RL step",
            path=str(target.env_file),
            fix='set nemo_rl_dir = "/path/to/RL" (as the job sees it), or pass --nemo-rl DIR '
            "(or NEMO_RL_HOME) when the cluster sees this machine's checkout at the same path",
            exit_code=2,
        )
    return target.profile.nemo_rl_dir, s.launcher or target.profile.launcher
