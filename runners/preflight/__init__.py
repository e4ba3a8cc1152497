"""Preflight: every check that can run before the GPUs start, as named rules.

A rule is a function `(ctx) -> Iterable[Finding]` registered with `@rule`; its modules register
on import (`RULE_MODULES`). A rule that cannot be evaluated warns, naming what it needed; a crash
inside one is E-RULE-CRASH: preflight fails closed, so a buggy rule never lets a launch through.

Owns: the rule registry (here), the rule modules beside it (`remote*`: a cluster submission;
`upstream_*`, `judge_in_job`, `folds`: what NeMo-RL itself says) and `topology` (GPUs and
nodes from the config).
May import: `runners.config`, `runners.nemo_rl`, `runners.rl_prep` (its dry checks),
`runners.launch` (remote rules judge a submission), `runners.secrets`, `runners.digest` (the
upstream judge's cache key), `runners.omegaconf_internals` (unresolved config nodes),
`catalog`. Only `run` and the CLI import it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, replace
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.errors import Finding, StepsError

if TYPE_CHECKING:
    from catalog.manifest import StepManifest
    from catalog.nemo_rl_version import NemoRLVersion
    from runners.config.compiler import CompiledConfig
    from runners.launch.local import LocalLaunch
    from runners.launch.request import RemoteFacts

RULE_MODULES: list[str] = [  # appended as modules land
    "runners.preflight.basics",
    "runners.preflight.schema",
    "runners.preflight.parallelism",
    "runners.preflight.backend_sections",
    "runners.preflight.dcp_export",
    "runners.preflight.algorithm_setup",
    "runners.preflight.gym",
    "runners.preflight.artifacts",
    "runners.preflight.data_loader",
    "runners.preflight.data_paths",
    "runners.preflight.output_dirs",
    "runners.preflight.local_gpus",
    "runners.preflight.degenerate_settings",
    "runners.preflight.remote",
    "runners.preflight.interpreter",
    "runners.preflight.remote_slurm",
    "runners.preflight.rl_prep",
    "runners.preflight.driver_setup",
    "runners.preflight.upstream_judge",
    "runners.preflight.resume",
    "runners.preflight.loss_function",
    "runners.preflight.data_setup",
    "runners.preflight.shell_variables",
]
RULE_CRASH = "E-RULE-CRASH"
NEMO_RL_CONFIG = ("nemo_rl_config",)  # what most rules need: a NeMo-RL MasterConfig


@dataclass
class BoundArtifact:
    """An input or output the manifest declares, bound to a path (absolute) or a hub id."""

    name: str
    type: str
    config_key: str
    value: str
    is_path: bool = True
    expected_rows: int | None = None  # what the rl_prep manifest it came from records
    # A config file's relative path as written; `value` is it joined to the directory NeMo-RL
    # opens it from (is_path False when unknown), `beside` it read from the file's folder.
    written: str = ""
    beside: str = ""


@dataclass
class PreflightContext:
    step_id: str
    manifest: StepManifest | None  # None: a context built without a step (tests, all rules)
    config: dict  # compiled and resolved
    config_file: Path | None = None  # the YAML the user named (for locations)
    inputs: list[BoundArtifact] = field(default_factory=list)
    outputs: list[BoundArtifact] = field(default_factory=list)
    nemo_rl_dir: Path | None = None
    gym_root: Path | None = None
    run_dir: Path | None = None
    compiled: CompiledConfig | None = None  # values with their file:line locations
    remote: RemoteFacts | None = None  # when launching on a cluster profile
    nemo_rl_version: NemoRLVersion | None = None  # None: unknown (every rule applies)
    local_launch: LocalLaunch | None = None  # a NeMo-RL script started here
    # what the step's runner kind has (its `has`): the rules that need more do not run
    has: frozenset[str] = frozenset(NEMO_RL_CONFIG)
    _raw: Any = field(default=None, init=False, repr=False, compare=False)

    def raw(self) -> Any:
        """The compiled config as written (`${...}`, `???` kept), made once; None without one."""
        if self._raw is None and self.compiled is not None:
            from omegaconf import OmegaConf

            self._raw = OmegaConf.to_container(self.compiled.config, resolve=False)
        return self._raw

    def get(self, dotted: str, default: Any = None) -> Any:
        from catalog.config_values import dotted_get

        return dotted_get(self.config, dotted, default)


Rule = Callable[[PreflightContext], Iterable[Finding]]


@dataclass(frozen=True)
class RuleSpec:
    """A registered rule: it runs for a step whose kind has every capability it `needs`."""

    id: str
    func: Rule
    needs: frozenset[str]
    doc: str
    versions: str = "all"  # the NeMo-RL releases its upstream assert exists in (`rule`)
    on: frozenset[str] | None = None  # a remote rule: what its backend must have

    def applies_to(self, has: frozenset[str]) -> bool:
        return self.needs <= has

    def applies_on(self, remote: RemoteFacts | None) -> bool:
        """A remote rule runs once the cluster host answered (else E-REMOTE-HOST) and its
        backend has what it is `on`."""
        if self.on is None:
            return True
        return remote is not None and remote.reached and self.on <= remote.has


RULES: dict[str, RuleSpec] = {}


def rule(
    rule_id: str,
    needs: tuple[str, ...] = NEMO_RL_CONFIG,
    versions: str = "all",
    on: tuple[str, ...] | None = None,
) -> Callable[[Rule], Rule]:
    """Register a rule for the kinds that have what it `needs` (`()`: every kind), the NeMo-RL
    `versions` its upstream assert exists in (`all`, `0.7.0+`, `pin`, `<0.6.0`: a bug fixed in
    0.6.0; an unknown version runs every rule) and, for a remote rule, what the cluster backend
    must have (`on=()`: every backend). Its codes name it in catalog/codes.toml (`check`)."""

    from catalog.nemo_rl_version import check_range

    if not check_range(versions):
        raise ValueError(f"@rule({rule_id!r}): bad versions range {versions!r}")

    def deco(func: Rule) -> Rule:
        doc = (func.__doc__ or "").strip()
        where = None if on is None else frozenset(on)
        RULES[rule_id] = RuleSpec(rule_id, func, frozenset(needs), doc, versions, where)
        return func

    return deco


def load_rules() -> dict[str, RuleSpec]:
    for mod in RULE_MODULES:
        import_module(mod)
    return RULES


def _with_recovery(f: Finding, manifest: StepManifest | None) -> Finding:
    """A finding without a fix gets the step's fix for its code, else catalog/codes.toml's."""
    if f.fix:
        return f
    spec = manifest.error(f.code) if manifest is not None else None
    if spec is not None and spec.recovery:
        fix = spec.recovery
    else:
        from catalog.codes import registry

        entry = registry().get(f.code)
        if entry is None:
            return f
        fix = entry.fix
    return replace(f, fix=fix)


def _crash(spec: RuleSpec, exc: Exception) -> Finding:
    where = exc.__traceback__
    while where is not None and where.tb_next is not None:
        where = where.tb_next
    at = f" at {Path(where.tb_frame.f_code.co_filename).name}:{where.tb_lineno}" if where else ""
    return Finding(
        RULE_CRASH,
        f"preflight rule `{spec.id}` crashed{at}: {type(exc).__name__}: {exc}; its check did "
        "not run, so the launch is stopped",
        fix="report this bug to the steps maintainers with the message above",
    )


def preflight(ctx: PreflightContext, only: Collection[str] | None = None) -> list[Finding]:
    """Run every rule that applies (or those `only` names); errors first, then warnings."""
    from catalog.nemo_rl_version import in_range

    findings: list[Finding] = []
    for spec in load_rules().values():
        if not spec.applies_to(ctx.has) or not in_range(ctx.nemo_rl_version, spec.versions):
            continue
        if (only is not None and spec.id not in only) or not spec.applies_on(ctx.remote):
            continue
        try:
            found = list(spec.func(ctx))
        except StepsError as exc:  # a located user-facing problem: report it as the rule's
            found = [exc.finding]
        except Exception as exc:  # a bug in the rule: fail closed, naming it
            found = [_crash(spec, exc)]
        findings.extend(_with_recovery(f, ctx.manifest) for f in found)
    from runners.config.override_findings import fold_override_findings

    findings = fold_override_findings(findings, ctx.compiled, ctx.raw)
    from runners.preflight.folds import fold_layout

    findings = fold_layout(findings, ctx)  # a config for a newer NeMo-RL: one finding
    from runners.preflight.folds import fold_upstream

    findings = fold_upstream(findings)  # upstream's verdict and ours on one key: one finding
    return sorted(findings, key=lambda f: (not f.is_error,))
