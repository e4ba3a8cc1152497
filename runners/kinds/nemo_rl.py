"""`nemo_rl`: one of NeMo-RL's example scripts (GRPO, DPO...) on a config compiled against the
NeMo-RL that will run; on Slurm through NeMo-RL's own ray.sub."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runners.kinds.base import Command, Prepared, RunnerKind, Setting, cluster_checkout, not_found

if TYPE_CHECKING:
    from runners.launch.local import LocalLaunch


class NemoRL(RunnerKind):
    name = "nemo_rl"
    has = frozenset({"nemo_rl_config"})
    ray_program = True
    can_chain = True
    compiles_with_nemo_rl = True

    def prepare(self, s: Setting) -> Prepared:
        from runners.config.env_pins import with_steps_home
        from runners.config.values import resolved_value
        from runners.nemo_rl import checkout as nemo_rl

        with_steps_home(s.env)  # before compiling: shipped configs name their data from it

        named = getattr(getattr(s.target, "profile", None), "nemo_rl_version", None)
        nrl = nemo_rl.resolve_target(s.nemo_rl_hint, s.env, named)
        algorithm = s.manifest.run.algorithm
        compiled = nemo_rl.compile_for(
            nrl, algorithm, s.config_file, list(s.overrides), s.config_home
        )
        gym = resolved_value(compiled.config, "env.should_use_nemo_gym") is True
        flag = {"env": {"should_use_nemo_gym": gym}}
        script = nemo_rl.choose_script(s.manifest.run, flag, nrl.version)
        return Prepared(compiled, nrl, nrl.with_script(script), script)

    def local_command(
        self, s: Setting, p: Prepared, resolved: dict, local: LocalLaunch | None, config: str
    ) -> Command:
        located = p.nrl.checkout if p.nrl is not None else None
        if p.checkout is None and located and gym_script_missing(located, str(p.script)):
            return Command(deferred=not_found(s, str(p.script)).deferred)  # E-GYM-SCRIPT
        if p.checkout is None or local is None:
            return not_found(s, str(p.script))
        return Command(local.command(str(p.script), config), p.checkout)

    def job_command(
        self, s: Setting, p: Prepared, resolved: dict, config: str
    ) -> tuple[list[str], str]:
        root, launcher = cluster_checkout(s)
        return [*shlex.split(launcher), str(p.script), "--config", config], root

    def nodes(self, resolved: Mapping[str, Any], profile: Any) -> int:
        from runners.launch.target import nodes_needed

        return nodes_needed(dict(resolved), profile.env)


def gym_script_missing(checkout: Path, script: str) -> bool:
    """The located checkout is too old for a Gym config (0.4.0): preflight's E-GYM-SCRIPT says
    so as an error, so "no checkout found" is not said again as a warning."""
    return script.startswith("examples/nemo_gym/") and not (checkout / script).is_file()


KIND = NemoRL()
