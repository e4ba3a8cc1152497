"""W&B for artifacts: env.toml's `[wandb]` table checked as W&B checks it, before any work, and a
run's inputs and outputs logged (W&B imported only when a run logs to it).

wandb.init refuses a project over 128 characters or holding any of / \\ # ? % : (its UsageError),
and an unset `${oc.env:NAME}` would reach it as literal text: each is E-WANDB-SETTINGS at the key's
line; W&B configured without the wandb package is W-WANDB-MISSING. A checkpoint, or a folder over
LARGE_DIR, is logged by `file://` reference; offline, the inputs go into the run's config, as W&B
refuses `use_artifact` there.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalog.errors import WARNING, Finding, StepsError
from runners.artifacts.names import Resolved

if TYPE_CHECKING:
    from runners.artifacts.names import Ref

PROJECT_CHARS = "/\\#?%:"  # wandb.sdk.wandb_settings.Settings.validate_project
MAX_PROJECT = 128
OC_ENV = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,([^}]*))?\}")
_FIX = "correct the [wandb] table of env.toml (project, entity), or remove it to log nothing to W&B"


def wandb_installed() -> bool:
    """Whether `import wandb` can find the package (without importing it: seconds)."""
    try:
        return importlib.util.find_spec("wandb") is not None
    except (ImportError, ValueError):  # sys.modules["wandb"] = None: blocked
        return False


def resolve_table(table: Mapping[str, Any], env: Mapping[str, str]) -> tuple[dict, list[str]]:
    """The table with each `${oc.env:NAME[,default]}` replaced from `env`, and the keys holding one
    that is unset (with no default)."""
    unset: list[str] = []
    out: dict[str, Any] = {}
    for key, value in table.items():
        if not isinstance(value, str):
            out[key] = value
            continue

        def one(m: re.Match, key: str = str(key)) -> str:
            name, default = m.group(1), m.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default.strip().strip("'\"")
            unset.append(key)
            return m.group()

        out[key] = OC_ENV.sub(one, value)
    return out, unset


def table_findings(
    table: Any, env: Mapping[str, str], path: Path | None, lines: Mapping[tuple, int]
) -> list[Finding]:
    """Every problem of an env.toml `[wandb]` table W&B would raise on, at its key's line."""
    if not isinstance(table, dict) or not table.get("project"):
        return []
    values, unset = resolve_table(table, env)
    where = str(path) if path else None
    found = []

    def bad(key: str, message: str, fix: str = _FIX) -> None:
        found.append(Finding("E-WANDB-SETTINGS", f"[wandb] {key}: {message}", where,
                             lines.get(("wandb", key)), fix=fix, key=f"wandb.{key}"))  # fmt: skip

    for key in dict.fromkeys(unset):
        names = ", ".join(f"${m.group(1)}" for m in OC_ENV.finditer(str(table[key])))
        bad(key, f"{table[key]!s} needs {names}, which is not set here",
            "export it before the run, or write the value into the [wandb] table")  # fmt: skip
    project = values.get("project")
    if "project" not in unset:
        if not isinstance(project, str):
            bad("project", f"must be a string, not {type(project).__name__}")
        elif len(project) > MAX_PROJECT:
            bad("project", f"is {len(project)} characters long; W&B takes at most {MAX_PROJECT}")
        elif found_chars := sorted({c for c in project if c in PROJECT_CHARS}):
            shown = " ".join(found_chars)
            bad("project", f"{project!r} holds {shown}: W&B refuses a project name with any "
                f"of {' '.join(PROJECT_CHARS)}")  # fmt: skip
    entity = values.get("entity")
    if "entity" not in unset and entity is not None and not isinstance(entity, str):
        bad("entity", f"must be a string, not {type(entity).__name__}")
    if not found and not wandb_installed():
        found.append(missing_finding(where, lines.get(("wandb",))))
    return found


def missing_finding(where: str | None, line: int | None) -> Finding:
    """W-WANDB-MISSING: W&B is configured here and the wandb package is not installed."""
    return Finding(
        "W-WANDB-MISSING",
        "a [wandb] table asks to log this run's artifacts to W&B, but the wandb package is not "
        "installed here: the run registers its outputs locally and logs nothing to W&B",
        where,
        line,
        fix="pip install 'nemo-rl-steps[wandb]' to log them, or remove the [wandb] table",
        severity=WARNING,
        key="wandb",
    )


LARGE_DIR = 64 << 20  # folders above this are logged as file:// references
OFFLINE_MODES = ("offline", "dryrun")


@dataclass
class WandbSettings:
    project: str
    entity: str | None
    source: str  # where the settings came from, for the report

    @property
    def offline(self) -> bool:
        return os.environ.get("WANDB_MODE", "").lower() in OFFLINE_MODES


def settings_for(
    config: dict, env_table: Any, env_file: str | None, env: Mapping[str, str] | None = None
) -> WandbSettings | None:
    """The run's W&B settings: the config's logger when it logs to W&B, else env.toml's table (its
    `${oc.env:...}` resolved from `env`)."""
    logger = config.get("logger") if isinstance(config, dict) else None
    if isinstance(logger, dict) and logger.get("wandb_enabled") is True:
        wb = logger.get("wandb")
        if isinstance(wb, dict) and wb.get("project"):
            return WandbSettings(str(wb["project"]), _str(wb.get("entity")), "logger.wandb")
    if isinstance(env_table, dict) and env_table.get("project"):
        env_table = resolve_table(env_table, os.environ if env is None else env)[0]
        where = f"[wandb] in {env_file}" if env_file else "[wandb]"
        return WandbSettings(str(env_table["project"]), _str(env_table.get("entity")), where)
    return None


def _str(value: Any) -> str | None:
    return str(value) if value else None


def import_wandb() -> Any:
    try:
        import wandb
    except ImportError:
        raise StepsError(
            "E-WANDB-MISSING",
            "W&B is configured but the wandb package is not installed",
            fix="pip install 'nemo-rl-steps[wandb]', or turn W&B off "
            "(the [wandb] table, logger.wandb_enabled)",
            exit_code=2,
        ) from None
    return wandb


def _new_run(wandb: Any) -> str | bool:
    """wandb.init's `reinit` for a run of its own beside any other: "create_new" from wandb
    0.19.10; True before (the previous run is finished, and ours are finished at once anyway)."""
    from packaging.version import InvalidVersion, Version

    try:
        return "create_new" if Version(wandb.__version__) >= Version("0.19.10") else True
    except (InvalidVersion, AttributeError, TypeError):
        return "create_new"


def dir_bytes(folder: Path) -> int:
    return sum(Path(d, f).stat().st_size for d, _, fs in os.walk(folder) for f in fs)


def wandb_artifact(wandb: Any, name: str, model: bool, path: str, hub: bool, meta: dict) -> Any:
    """An Artifact holding `path`: a copy when small, a reference when a model or large."""
    art = wandb.Artifact(name, type="model" if model else "dataset", metadata=meta)
    p = Path(path)
    if hub:
        art.add_reference(f"https://huggingface.co/{path}", checksum=False)
    elif p.is_file():
        art.add_file(str(p))
    elif p.is_dir() and not model and dir_bytes(p) <= LARGE_DIR:
        art.add_dir(str(p))
    else:  # a checkpoint, a large folder, or a path not here
        art.add_reference(p.resolve().as_uri(), checksum=False)
    return art


@dataclass
class Logged:
    """One artifact in the report: its name, the alias it went under, its steps digest."""

    port: str
    artifact: str
    type: str
    digest: str | None
    path: str
    by_reference: bool = False


def log_run(
    settings: WandbSettings,
    *,
    step: str,
    run_dir: Path | None,
    config: dict,
    used: list[Logged],
    produced: list[Logged],
    is_model: Any,
    name: str | None = None,
    group: str | None = None,
) -> dict:
    """One W&B run for a steps run or pipeline stage; what was logged (offline: what to sync)."""
    wandb = import_wandb()
    try:
        run = wandb.init(
            project=settings.project,
            entity=settings.entity,
            dir=str(run_dir) if run_dir is not None else None,
            group=group,
            job_type=step,
            name=name or f"{step}/{run_dir.name if run_dir else step}",
            reinit=_new_run(wandb),
            config={**config, "steps_inputs": [vars(u) for u in used]},
            settings=wandb.Settings(console="off", silent=True),
        )
        try:
            for u in used:
                if not run.settings._offline:
                    named = u.artifact.partition(":")[0]
                    meta = {"steps_type": u.type, "steps_digest": u.digest, "steps_path": u.path}
                    hub = not Path(u.path).is_absolute()  # a hub id: named, never hashed
                    art = wandb_artifact(wandb, named, is_model(u.type), u.path, hub, meta)
                    run.use_artifact(art)
            for o in produced:
                named, _, alias = o.artifact.partition(":")
                meta = {"steps_type": o.type, "steps_digest": o.digest, "steps_path": o.path,
                        "port": o.port, "step": step}  # fmt: skip
                art = wandb_artifact(wandb, named, is_model(o.type), o.path, False, meta)
                o.by_reference = any(e.ref for e in art.manifest.entries.values())
                run.log_artifact(art, aliases=["latest", alias] if alias else ["latest"])
            offline = bool(run.settings._offline)
            local_dir = str(Path(run.dir).parent) if offline else None
        finally:
            run.finish()
    except Exception as exc:  # W&B raises its own errors (usage, network, auth): a finding
        raise StepsError(
            "E-WANDB-LOG",
            f"W&B did not log this run ({type(exc).__name__}: {str(exc)[:300]}); its outputs "
            f"are registered here all the same (settings from {settings.source})",
            fix="correct the W&B settings, or set WANDB_MODE=offline to log locally "
            "(`wandb sync` uploads later)",
            exit_code=2,
        ) from None
    report: dict[str, Any] = {
        "project": settings.project,
        "entity": settings.entity,
        "settings_from": settings.source,
        "mode": "offline" if offline else "online",
        "used": [vars(u) for u in used],
        "logged": [vars(o) for o in produced],
    }
    if offline:
        report["sync"] = f"wandb sync {local_dir}"
        report["note"] = "offline: nothing was uploaded; inputs are in the run's config"
    return report


def fetch(settings: WandbSettings, ref: Ref, download_root: Path) -> Resolved:
    """A reference not in the registry, from W&B: its recorded path when here, else a download."""
    wandb = import_wandb()
    project = f"{settings.entity}/{settings.project}" if settings.entity else settings.project
    try:
        art = wandb.Api().artifact(f"{project}/{ref}")
    except Exception as exc:  # W&B raises its own errors for a missing name or no network
        raise StepsError(
            "E-ARTIFACT-UNKNOWN",
            f"no artifact '{ref}' in the local registry or in W&B project {project}: {exc}",
            fix="check the name (`python -m steps lineage NAME`), or run the step that makes it",
            exit_code=2,
        ) from None
    meta = art.metadata or {}
    path = meta.get("steps_path")
    if not (path and Path(path).exists()):
        path = art.download(root=str(download_root / ref.name / art.version))
    return Resolved("", ref, str(path), str(meta.get("steps_type") or art.type), "wandb",
                    art.version)  # fmt: skip
