"""A cluster launch target: a profile plus its backend, as `plan_run` sees it (where the run
dir lands, what one probe of the cluster saw, the `LaunchRequest` handed to the backend)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.config_values import as_int, dotted_get
from catalog.errors import StepsError
from runners.launch.backends import traits
from runners.launch.profiles.env_toml import LocalProfile, RayProfile, SlurmProfile, resolve_profile
from runners.launch.request import NOT_SUBMITTED, LaunchRequest, RemoteFacts
from runners.rundir import JobRecord, update_record

UNREACHABLE = "E-REMOTE-HOST"  # a probe that got no answer: one finding among the run's others


def _int(value: Any, default: int) -> int:
    """An integer read as preflight reads one (topology.as_int), else `default`."""
    number = as_int(value)
    return default if number is None else number


def nodes_needed(config: dict, env: dict[str, str]) -> int:
    """cluster.num_nodes, plus NeMo-Gym's GPU nodes when Gym runs, plus a dedicated Ray head."""
    nodes = _int(dotted_get(config, "cluster.num_nodes"), 1)
    if dotted_get(config, "env.should_use_nemo_gym") is True:
        nodes += _int(dotted_get(config, "env.nemo_gym.num_gpu_nodes"), 0)
    if str(env.get("DEDICATED_RAY_HEAD", "0")) == "1":
        nodes += 1
    return nodes


def bridge_script(resolved: dict) -> str | None:
    """Megatron-Bridge's conversion script as the job sees it (convert steps only)."""
    if "megatron_path" not in resolved:
        return None
    mb = resolved.get("megatron_bridge") or {}
    root = str(mb.get("root", "/opt/Megatron-Bridge")).rstrip("/")
    return f"{root}/{mb.get('script', 'scripts/conversion/run_conversion.py')}"


def profile_paths(profile: Any) -> list[str]:
    """What every probe of a profile asks about: its checkout (and ray.sub), its mounts."""
    root = profile.nemo_rl_dir
    paths = [root, *([f"{root}/ray.sub"] if "ray_sub" in traits(profile.executor).has else [])]
    return [*(paths if root else []), *(m.split(":")[0] for m in getattr(profile, "mounts", []))]


@dataclass
class ClusterTarget:
    """`--run/--batch PROFILE` for a slurm or ray profile."""

    name: str
    env_file: Path
    profile: SlurmProfile | RayProfile
    env: dict[str, str] = field(default_factory=dict)
    attached: bool = False

    def __post_init__(self) -> None:
        self.traits = traits(self.profile.executor)
        self.backend = self.traits.implementation()(self.name, self.profile, self.env)

    @property
    def host(self) -> str | None:
        return getattr(self.profile, "host", None)

    def local_checkout(self) -> str | None:
        """The profile's checkout when this machine sees it (a login node): for schema checks."""
        path = self.profile.nemo_rl_dir
        return path if path and self.host is None and os.path.isdir(path) else None

    def nemo_rl_dir(self) -> Path | None:
        return Path(self.profile.nemo_rl_dir) if self.profile.nemo_rl_dir else None

    def job_dir(self, step_id: str, run_dir: Path) -> str:
        return self.backend.job_dir(step_id, run_dir.name, run_dir)

    def probe(
        self, resolved: dict, binding: Any, script: str | None, job_dir: str, ray_program: bool
    ) -> RemoteFacts:
        """One round trip to the cluster: which of the paths the job needs exist there."""
        paths = [a.value for a in binding.inputs if a.is_path and a.value not in ("", "???")]
        paths += profile_paths(self.profile)
        root = self.profile.nemo_rl_dir
        if root and script:
            paths.append(f"{root}/{script}")
        bridge = bridge_script(resolved)
        if bridge:
            paths.append(bridge)
        try:
            facts = self.backend.probe(list(dict.fromkeys(paths)), script)
        except StepsError as exc:
            if exc.finding.code != UNREACHABLE:
                raise
            facts = RemoteFacts(self.name, self.profile, job_dir, unreached=exc.finding)
        facts.job_dir = job_dir
        facts.ray_program = ray_program
        facts.env_file = str(self.env_file)
        facts.derived = len(binding.derived)
        self.facts = facts
        return facts

    def request(self, plan: Any, extra_env: dict[str, str]) -> LaunchRequest:
        """The hand-over: command, dirs, plain env, secret names, nodes and GPUs."""
        p = self.profile
        env = dict(p.env)
        uses_ray_sub = "ray_sub" in self.traits.has and plan.kind.ray_program
        facts = getattr(self, "facts", None)
        gpus = dotted_get(plan.resolved, "cluster.gpus_per_node")
        return LaunchRequest(
            step_id=plan.step_id,
            runner=plan.runner,
            run_dir=plan.run_dir,
            job_dir=plan.job_dir,
            command=list(plan.command or []),
            cwd=str(plan.cwd),
            env=env,
            secret_names=[*p.secrets, *extra_env],
            config_secrets=dict(extra_env),
            nodes=plan.kind.nodes(plan.resolved, p),
            gpus_per_node=_int(gpus, 0) or getattr(p, "gpus_per_node", None),
            uses_ray_sub=uses_ray_sub,
            account=facts.account if facts is not None and uses_ray_sub else None,
            partition=facts.partition if facts is not None and uses_ray_sub else None,
        )

    @staticmethod
    def settle(run_dir: Path, step_id: str, job: JobRecord) -> None:
        """After a submit: run.json records what became of the job; one refused for certain
        leaves no run dir (nor the empty folders of its step and runs/)."""
        if job.state != NOT_SUBMITTED:
            update_record(run_dir, job=job.dump())
            return
        shutil.rmtree(run_dir, ignore_errors=True)
        for folder in list(run_dir.parents)[: step_id.count("/") + 2]:  # <step id>/, runs/
            try:
                folder.rmdir()
            except OSError:  # not empty (other runs) or not ours to remove
                return

    def record(self) -> dict:
        return {
            "executor": self.profile.executor,
            "profile": self.name,
            "env_file": str(self.env_file),
            "host": self.host,
        }

    def describe(self, request: LaunchRequest | None) -> dict:
        """What a dry run shows: how the job would be submitted, env var names only."""
        out: dict[str, Any] = {**self.record()}
        facts = getattr(self, "facts", None)
        if facts is not None and facts.ray_version:
            out["ray_version"] = facts.ray_version
            out["cluster_gpus"] = facts.cluster_gpus
        if request is None:
            return out
        return {**out, **self.backend.describe(request)}


def cluster_target(
    name: str, env_file: str | None, env: dict[str, str], cwd: Path, attached: bool
) -> tuple[ClusterTarget | None, Any, Path]:
    """(target, profile, env file): target is None for `executor = "local"` profiles."""
    # run_partition / batch_partition
    _, path, profile = resolve_profile(name, env_file, env, cwd, "run" if attached else "batch")
    if isinstance(profile, LocalProfile):
        return None, profile, path
    return ClusterTarget(name, path, profile, dict(env), attached), profile, path
