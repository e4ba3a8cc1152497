"""`pipeline run --batch/--run PROFILE`: every stage planned and checked as `run --batch` would,
each with its own profile, before anything is queued; one probe per profile, asking also about
the paths later stages read. Findings about inputs not written yet are judged in the job
(`materialize`)."""

from __future__ import annotations

import copy
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.errors import Finding, StepsError
from runners.config.secret_overrides import move_secrets
from runners.pipeline import materialize
from runners.pipeline.dry_run import drop_pending, stage_request
from runners.pipeline.lineage import cache_key, fingerprint

RUNS = "_runs"  # a stage's run dirs: <root>/<stage>/_runs/<step id>/<run>


@dataclass
class StagePlan:
    """One stage as it will be submitted: its profile, its `run` plan and its findings."""

    stage: Any  # catalog.planner.model.PlannedStage
    profile: str
    target: Any  # runners.launch.target.ClusterTarget
    chain: bool  # until_done: a chain of segments
    run: Any = None  # runners.run.RunPlan; None when planning it stopped at an error
    findings: list[Finding] = field(default_factory=list)
    code: int = 0  # the exit code of an error that stopped its planning (2: setup)
    secret_env: dict[str, str] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)  # secrets replaced by references

    @property
    def ok(self) -> bool:
        return self.run is not None and not any(f.is_error for f in self.findings)

    def key(self, upstream: dict[str, str]) -> str:
        """The stage's identity on the cluster: step, config as file and overrides give it (before
        binding), the env values it reads, inputs' contents (an earlier stage's: its key in
        `upstream`), outputs' places, NeMo-RL version, profile and resources."""
        from runners.pipeline.stage import config_hash

        req = self.run.request
        chash, _, env_names = config_hash(self.stage, self.overrides)
        where = [self.profile, req.nodes, req.gpus_per_node, req.partition, self.chain]
        inputs = {
            p: {"stage": b.producer, "key": upstream.get(b.producer)}
            if b.producer
            else fingerprint(b.value, b.hub)
            for p, b in self.stage.inputs.items()
        }
        return cache_key(
            self.stage.step,
            self.stage.version,
            hashlib.sha256(f"{chash}\n{where}".encode()).hexdigest(),
            inputs,
            {p: b.value for p, b in self.stage.outputs.items()},
            self.run.nemo_rl_version,  # its version and source, as checked
            {name: os.environ.get(name) for name in env_names},
        )


class _ProbeOnce:
    """A probe that asks the cluster once (about `more` paths too), then copies what it saw."""

    def __init__(self, probe: Any, more: list[str]) -> None:
        self.probe, self.more, self.facts = probe, more, None

    def __call__(self, paths: list[str], script: str | None) -> Any:
        if self.facts is None:
            self.facts = self.probe(list(dict.fromkeys([*paths, *self.more])), script)
        facts = copy.copy(self.facts)
        facts.exists = dict(self.facts.exists)
        return facts


def stage_profiles(plan: Any, pf: Any, default: str | None) -> dict[str, str]:
    """stage id -> profile; E-PIPELINE-PROFILE for a stage with none."""
    named = {s.id: s.profile for s in pf.model.stages if s.profile}
    out = {}
    for stage in plan.stages:
        profile = named.get(stage.id) or default
        if not profile:
            raise StepsError(
                "E-PIPELINE-PROFILE",
                f"stage '{stage.id}' has no profile and none was given",
                path=str(pf.path),
                fix="give `--batch PROFILE` (or `--run PROFILE`), or `profile:` in the stage",
                exit_code=2,
            )
        out[stage.id] = profile
    return out


def _paths_read(stage: Any, profile: Any) -> list[str]:
    """A stage's inputs not written by a stage, and its NeMo-RL script."""
    from catalog.tomlfile import load_toml

    paths = [b.value for b in stage.inputs.values() if not b.hub and not b.producer]
    script = (load_toml(stage.step_dir / "step.toml").get("run") or {}).get("script")
    if script and profile.nemo_rl_dir:
        paths.append(f"{profile.nemo_rl_dir}/{script}")
    return paths


def targets_for(
    plan: Any, profiles: dict[str, str], env_file: str | None, env: dict, cwd: Path, attached: bool
) -> dict[str, Any]:
    """profile -> its cluster target, each probing once; a `local` profile is E-PIPELINE-PROFILE."""
    from runners.launch.target import cluster_target

    targets: dict[str, Any] = {}
    for name in dict.fromkeys(profiles.values()):
        target, _, path = cluster_target(name, env_file, dict(env), cwd, attached=attached)
        if target is None:
            raise StepsError(
                "E-PIPELINE-PROFILE",
                f'profile [{name}] runs here (executor = "local"): a pipeline on this machine '
                "needs no profile",
                path=str(path),
                fix=f"drop --batch/--run (or name a slurm or ray profile instead of [{name}])",
                exit_code=2,
            )
        more = [p for s in plan.stages if profiles[s.id] == name for p in
                _paths_read(s, target.profile)]  # fmt: skip
        target.backend.probe = _ProbeOnce(target.backend.probe, more)
        targets[name] = target
    _probe_together(list(targets.values()))
    return targets


def _probe_together(targets: list[Any]) -> None:
    """Each profile's probe, side by side; what one refuses is raised again when its first stage is
    planned."""
    if len(targets) < 2:
        return
    from concurrent.futures import ThreadPoolExecutor

    from runners.launch.target import profile_paths

    def one(target: Any) -> None:
        try:
            target.backend.probe(profile_paths(target.profile), None)
        except StepsError:
            target.backend.probe.facts = None  # asked again, and refused, by the stage

    with ThreadPoolExecutor(len(targets)) as pool:
        list(pool.map(one, targets))


def plan_stage(
    stage: Any, profile: str, target: Any, spec: Any, opts: Any, env: dict, argv: list[str],
    root: Path,
) -> StagePlan:  # fmt: skip
    """The stage planned as `run --batch PROFILE` plans it, less what is judged in the job."""
    from runners.run import plan_run

    chain = bool(spec is not None and spec.until_done)
    sp = StagePlan(stage, profile, target, chain)
    sp.overrides, sp.secret_env = move_secrets(stage.overrides, env)
    options = None
    if chain:
        from runners.chain.settings import ChainOptions

        options = ChainOptions(max_segments=spec.max_segments or ChainOptions.max_segments,
                               gpu_hours=spec.gpu_hours)  # fmt: skip
    req = stage_request(
        stage,
        opts,
        sp.overrides,
        runs_dir=str(root / stage.id / RUNS),
        force=True,  # whether the stage runs again is the pipeline's decision (its cache key)
        chain=options,
        pending=[p for p, b in stage.inputs.items() if b.producer],
    )
    try:
        sp.run = plan_run(req, cwd=Path.cwd(), env={**env, **sp.secret_env}, argv=argv,
                          target=target)  # fmt: skip
    except StepsError as exc:
        sp.findings, sp.code = [exc.finding], exc.exit_code
        return sp
    materialize.first(sp.run, target)
    # Judged in the job instead: dropped, so the run dir is written whole (deferred record too).
    sp.findings = sp.run.findings = drop_pending(stage, sp.run.findings)
    return sp


def plan_cluster(plan: Any, pf: Any, opts: Any, env: dict | None = None) -> list[StagePlan]:
    """Every stage planned and checked for the cluster; nothing written, nothing queued."""
    env = dict(os.environ if env is None else env)
    profiles = stage_profiles(plan, pf, opts.profile)
    targets = targets_for(plan, profiles, opts.env_file, env, Path.cwd(), opts.attached)
    specs = {s.id: s for s in pf.model.stages}
    argv = ["python", "-m", "steps", "pipeline", "run", str(plan.file)]
    stages = []
    for s in plan.stages:
        name = profiles[s.id]
        cmd = [*argv, f"--stage={s.id}"]
        spec = specs.get(s.id)
        stages.append(plan_stage(s, name, targets[name], spec, opts, env, cmd, plan.root))
    return stages
