"""`dcp_to_hf`: NeMo-RL's own DCP-to-Hugging-Face converter, run from its checkout.

The config compiles alone (the converter reads the checkpoint's own config.yaml); the script is
the manifest's; a plain job on Slurm (no Ray).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runners.kinds.base import Command, Prepared, RunnerKind, Setting, cluster_checkout, not_found

if TYPE_CHECKING:
    from runners.launch.local import LocalLaunch


class DcpToHf(RunnerKind):
    name = "dcp_to_hf"

    def prepare(self, s: Setting) -> Prepared:
        from runners.nemo_rl.checkout import locate_checkout

        prepared = super().prepare(s)
        script = str(s.manifest.run.script)
        found = locate_checkout(s.nemo_rl_hint, s.env)
        prepared.script = script
        prepared.checkout = found if found is not None and (found / script).is_file() else None
        return prepared

    def local_command(
        self, s: Setting, p: Prepared, resolved: dict, local: LocalLaunch | None, config: str
    ) -> Command:
        from runners.nemo_rl import dcp_export

        if p.checkout is None or local is None:
            return not_found(s, str(p.script))
        argv, more, skip = dcp_export.plan(resolved, local.command, str(p.script), s.force)
        return Command(argv, p.checkout, more, skip)

    def job_command(
        self, s: Setting, p: Prepared, resolved: dict, config: str
    ) -> tuple[list[str], str]:
        from runners.nemo_rl.dcp_export import launch_argv

        root = cluster_checkout(s)
        assert s.target is not None
        launcher = s.launcher or s.target.profile.launcher
        return launch_argv(launcher, str(p.script), resolved), root


KIND = DcpToHf()
