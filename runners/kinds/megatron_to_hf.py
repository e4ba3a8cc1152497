"""`megatron_to_hf`: Megatron-Bridge exports a Megatron checkpoint (`runners.convert`); a plain
job on a cluster, locally a child whose output is registered on exit 0."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from runners.kinds.base import Command, LocalRun, Prepared, RunnerKind, Setting

if TYPE_CHECKING:
    from runners.launch.local import LocalLaunch


class MegatronToHf(RunnerKind):
    name = "megatron_to_hf"
    has = frozenset({"megatron_bridge"})
    in_process = "runners.convert.run_to_end (a child; its output registered on exit 0)"

    def local_command(
        self, s: Setting, p: Prepared, resolved: dict, local: LocalLaunch | None, config: str
    ) -> Command:
        from runners import convert

        argv, cwd, more, skip = convert.plan(resolved, s.force)
        return Command(argv, cwd, more, skip)

    def job_command(
        self, s: Setting, p: Prepared, resolved: dict, config: str
    ) -> tuple[list[str], str]:
        from runners import convert

        argv, cwd, _, _ = convert.plan(resolved, force=True)
        return list(argv or []), str(cwd)

    def launch(self, run: LocalRun) -> dict | None:
        from runners.convert import require_bridge, run_to_end

        require_bridge(run.findings)
        return run_to_end(list(run.argv or []), Path(str(run.cwd)), run.env, "megatron_to_hf")


KIND = MegatronToHf()
