"""`rl_prep`: a blend prepared into NeMo-Gym JSONL shards on the CPU, in this process locally;
on a cluster `steps run` from the copy of our code staged with the run dir (no GPUs)."""

from __future__ import annotations

from runners.kinds.base import LocalRun, Prepared, RunnerKind, Setting


class RlPrep(RunnerKind):
    name = "rl_prep"
    has = frozenset({"rl_prep_blend"})
    in_process = "runners.rl_prep.run_step"
    needs_gpus = False
    runs_our_code = True

    def job_command(
        self, s: Setting, p: Prepared, resolved: dict, config: str
    ) -> tuple[list[str], str]:
        from runners.launch.job_code import steps_command

        assert s.target is not None
        job_dir = config.rsplit("/", 1)[0]
        launcher = steps_command(job_dir, s.target.profile)
        force = ["--force"] if s.force else []  # config.yaml has the overrides, not the flags
        return [*launcher, "run", s.step_id, "-c", config, *force], job_dir

    def launch(self, run: LocalRun) -> dict | None:
        from runners.rl_prep import run_step

        return run_step(run.resolved, config_dir=run.config_dir, force=run.force)


KIND = RlPrep()
