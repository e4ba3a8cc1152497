"""`dcp_to_hf`: NeMo-RL's own DCP-to-Hugging-Face converter, run from its checkout (the config
compiles alone); a plain job on a cluster, locally a child whose output is registered on exit 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from runners.kinds.base import (
    Command,
    LocalRun,
    Prepared,
    RunnerKind,
    Setting,
    cluster_checkout,
    not_found,
)

if TYPE_CHECKING:
    from runners.launch.local import LocalLaunch


class DcpToHf(RunnerKind):
    name = "dcp_to_hf"
    has = frozenset({"dcp_export"})
    in_process = "runners.convert.run_to_end (a child; its output registered on exit 0)"

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

        root, launcher = cluster_checkout(s)
        return launch_argv(launcher, str(p.script), resolved), root

    def launch(self, run: LocalRun) -> dict | None:
        from runners.convert import run_to_end

        return run_to_end(list(run.argv or []), Path(str(run.cwd)), run.env, "dcp_to_hf")


KIND = DcpToHf()
