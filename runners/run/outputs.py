"""What a run registers, checked before any work and written after: its outputs in the artifact
registry and, when configured, W&B."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.errors import Finding, StepsError
from runners.run.plan import RunPlan

if TYPE_CHECKING:
    from runners.artifacts.record import FinishedRun


def registry_findings(root: Path, manifest: Any) -> list[Finding]:
    """A registry the run could not use when it ends (not yours alone, damaged): a finding now."""
    if not manifest.produces:
        return []
    from runners.artifacts.registry import load

    try:
        load(root)
    except StepsError as exc:
        return [exc.finding]
    return []


def wandb_table(env_file: str | None, env: dict, cwd: Path) -> tuple[Path | None, Any]:
    """(env.toml, its `[wandb]` table) of this run, or (None, None)."""
    from catalog.tomlfile import load_toml
    from runners.launch.profiles.env_file import find_env_file

    try:
        path = Path(env_file) if env_file else find_env_file(None, env, cwd)
        return path, load_toml(path, code="E-PROFILE").get("wandb")
    except StepsError:
        return None, None  # no env.toml (or one `run` would refuse): no [wandb] from it


def wandb_settings(config: dict, env_file: str | None, env: dict, cwd: Path):
    """W&B for this run: the config's logger, else env.toml's `[wandb]` table (None: off)."""
    from runners.artifacts.wandb_log import settings_for

    path, table = wandb_table(env_file, env, cwd)
    return settings_for(config, table, str(path) if path else None, env)


def wandb_findings(plan_env_file: str | None, env: dict, cwd: Path) -> list[Finding]:
    """The `[wandb]` table as W&B will take it when this run's outputs are logged: the dry run
    and the run say the same, before any work (runners.artifacts.wandb_log)."""
    from catalog.tomlfile import key_lines
    from runners.artifacts.wandb_log import table_findings

    path, table = wandb_table(plan_env_file, env, cwd)
    if path is None or not isinstance(table, dict):
        return []
    try:
        lines = key_lines(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        lines = {}
    return table_findings(table, env, path, lines)


def _registry_of(plan: RunPlan) -> Path:
    """A pipeline's registry (`$STEPS_REGISTRY_DIR`), else the run's runs root."""
    from runners.rundir import REGISTRY_DIR_VAR

    shared = plan.env.get(REGISTRY_DIR_VAR)
    return Path(shared).resolve() if shared else plan.run_dir.parents[plan.step_id.count("/") + 1]


def _finished(plan: RunPlan) -> FinishedRun:
    """What the artifact registry records of the run (runners.artifacts.record.FinishedRun)."""
    from catalog.types import load_catalog_types
    from runners.artifacts.record import FinishedRun
    from runners.run.plan import RunFiles

    files = plan.files
    assert isinstance(files, RunFiles)  # set by the plan
    return FinishedRun(
        step=plan.step_id,
        run_dir=plan.run_dir,
        root=_registry_of(plan),
        inputs=files.binding.inputs,
        outputs=files.binding.outputs,
        nemo_rl_version=files.nemo_rl_version,
        config=plan.resolved,
        wandb=wandb_settings(plan.resolved, plan.env_file, plan.env, Path(files.cwd)),
        graph=load_catalog_types(),
    )


def record_outputs(plan: RunPlan) -> dict:
    """After a run that returned here: its outputs registered (and logged to W&B)."""
    from runners.artifacts.record import record_run

    return record_run(_finished(plan))


def record_pending(plan: RunPlan) -> dict:
    """Before a run that ends elsewhere (an exec, a cluster job): its outputs as pending
    versions, settled once it ended (runners.artifacts.pending). Returns the report."""
    from runners.artifacts.pending import this_process, training_end
    from runners.artifacts.record import record_launch

    watch = this_process(*training_end(plan.resolved)) if plan.target is None else None
    return record_launch(_finished(plan), watch)
