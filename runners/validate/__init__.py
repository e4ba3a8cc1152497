"""`validate`: a real artifact judged by its type's contract, before any GPU starts.

`prepare` decides the contract and options (a step's config taken as its dry run takes it) and
checks the input can be read (if not: a setup error, exit 2); `judge` runs the contract. Imports
stay inside the functions: validating rows starts without the type graph's pydantic models.

Owns: `prepare` and `judge` (one module).
May import: `runners.config`, `catalog`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from catalog.errors import Finding


@dataclass
class Judging:
    """What an artifact is judged by: its type, the contract, its options, notes said once."""

    type_name: str
    contract: str
    options: dict[str, Any] = field(default_factory=dict)
    notes: list[Finding] = field(default_factory=list)


def prepare(
    type_name: str,
    path: Path,
    *,
    step: str | None = None,
    config: str | None = None,
    overrides: list[str] | None = None,
    options: dict[str, Any] | None = None,
    gym_version: str | None = None,
    allow_hub_id: bool = False,
) -> Judging:
    """The contract and options `path` is judged by (`step`'s config first, then `options`);
    E-INPUT-NOT-FOUND / E-INPUT-UNREADABLE (exit 2) when the input cannot be read."""
    from catalog.contracts.validation import resolve_contract

    judging = Judging(type_name, resolve_contract(type_name))
    if step:
        judging.type_name, judging.contract, judging.options, judging.notes = _step_options(
            step, config, list(overrides or []), gym_version, type_name, judging.contract
        )
    judging.options.update(options or {})
    require_input(path, judging.contract, allow_hub_id)
    if gym_version or judging.contract == "nemo_gym_rows":
        from catalog.contracts.gym_facts import detect_gym

        opts = judging.options
        opts["gym_version"] = gym_version or opts.get("gym_version") or detect_gym()
    return judging


def judge(
    judging: Judging,
    path: Path,
    max_errors: int = 20,
    allow_hub_id: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Any:
    """The contract's report on `path` (catalog.contracts.validation), the notes first."""
    from catalog.contracts import validate_artifact

    report = validate_artifact(
        judging.type_name,
        path,
        options=judging.options,
        max_errors=max(0, max_errors),
        progress=progress,
        allow_hub_id=allow_hub_id,
    )
    report.findings[:0] = judging.notes
    report.warnings += len(judging.notes)
    return report


def _step_config(step: str, config: str | None, overrides: list[str]) -> dict:
    """The step's compiled, resolved config (what NeMo-RL would see)."""
    from catalog.discovery import discover, resolve
    from runners.config.compiler import compile_config

    entry = resolve(step, discover([]))
    name = config or entry.data.get("run", {}).get("default_config", "default")
    path = Path(name) if name.endswith((".yaml", ".yml")) else entry.config_path(name)
    return compile_config(path, overrides, entry.config_dir).resolved()


def _step_options(
    step: str, config: str | None, overrides: list[str], gym_version: str | None,
    type_name: str, contract: str,
) -> tuple[str, str, dict, list]:  # fmt: skip
    """The type, contract, options and notes --step's config judges the rows by, as the dry run
    does (`step_contract`), with --gym-version DIR as the Gym tree."""
    from catalog.contracts.options import step_contract

    cfg = _step_config(step, config, overrides)
    tree = Path(gym_version).expanduser() if gym_version else None
    gym_root = tree if tree is not None and tree.is_dir() else None
    user_class = _user_class_note(cfg, contract)
    if user_class:  # its rows are the class's: judged as JSON objects only, as the dry run
        return "training_jsonl", "jsonl", {}, user_class
    type_name, contract, options = step_contract(type_name, contract, cfg, gym_root=gym_root)
    notes = _gym_notes(cfg, gym_root) if contract == "nemo_gym_rows" else []
    return type_name, contract, options, notes


def _user_class_note(cfg: dict, contract: str) -> list:
    """W-DATA-CLASS when data.train's dataset_name is a user class (the dry run says it too)."""
    from catalog.contracts.loader_formats import (
        USER_CLASS,
        USER_CLASS_FIX,
        data_open,
        user_class_message,
    )
    from catalog.errors import WARNING, Finding

    opened = data_open(cfg, "data.train")
    if opened.reader != "class" or contract == "nemo_gym_rows":
        return []
    key = "data.train.dataset_name"
    message = f"{key}: {user_class_message(opened)}"
    return [Finding(USER_CLASS, message, None, fix=USER_CLASS_FIX, severity=WARNING, key=key)]


def _gym_notes(cfg: dict, gym_root: Path | None) -> list:
    """What the Gym row check cannot know, said once (as the dry run's gym_agents_defined)."""
    from catalog.contracts.gym_routes import UNDERIVED, UNDERIVED_FIX, underived_message
    from catalog.contracts.options import gym_routes_for
    from catalog.errors import WARNING, Finding

    routes = gym_routes_for(cfg, gym_root)
    underived = routes.underived() if routes is not None else {}
    if not underived:
        return []
    message = underived_message(underived)
    key = "env.nemo_gym.config_paths"
    return [Finding(UNDERIVED, message, None, fix=UNDERIVED_FIX, severity=WARNING, key=key)]


def require_input(path: Path, contract: str, allow_hub_id: bool) -> None:
    """A missing or unreadable input is a setup error (exit 2). A device or a named pipe is
    refused at once (reading it would not end); `<(command)` is left to the scan to read."""
    import errno
    import os
    import stat

    from catalog.contracts import ROW_CONTRACTS
    from catalog.contracts.input_access import (
        ENDLESS_FIX,
        denied,
        endless_kind,
        endless_message,
        folder_problem,
    )
    from catalog.errors import StepsError

    try:
        os.lstat(path)
    except OSError as exc:
        if exc.errno == errno.EACCES:
            raise denied(path) from None
        if allow_hub_id and contract == "hf_checkpoint":
            return  # a hub id: the contract decides
        raise StepsError(
            "E-INPUT-NOT-FOUND",
            "the input does not exist",
            path=str(path),
            fix="check the path"
            + (" (or pass --allow-hub-id)" if contract == "hf_checkpoint" else ""),
            exit_code=2,
        ) from None
    kind = endless_kind(path)
    if kind is not None:
        raise StepsError(
            "E-INPUT-KIND",
            f"the input {endless_message(kind)}",
            path=str(path),
            fix=ENDLESS_FIX,
            exit_code=2,
        )
    try:  # each file it stands for opens (regular files only: see above)
        if path.is_dir() and folder_problem(path):
            raise denied(path, path)
        files = [path]
        if contract in ROW_CONTRACTS and path.is_dir():
            from catalog.contracts.jsonl import resolve_sources

            files = [s.path for s in resolve_sources(path)[0]]
        for f in files:
            try:
                if f.is_dir():
                    with os.scandir(f):
                        pass
                elif stat.S_ISREG(os.stat(f).st_mode):
                    with open(f, "rb"):
                        pass
            except OSError as exc:
                raise StepsError(
                    "E-INPUT-UNREADABLE",
                    f"cannot read the input ({exc.strerror})",
                    path=str(f),
                    fix="check the path and its permissions",
                    exit_code=2,
                ) from None
    except PermissionError as exc:  # a folder on the way that this user may not search
        raise denied(Path(exc.filename or path)) from None
