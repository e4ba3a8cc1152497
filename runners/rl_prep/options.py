"""rl_prep's options, one strict pydantic model for preflight and the run alike (so `run --dry-run`
rejects exactly what the run would); a blend's seed, ratios and shard_size win."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ByteSize, ConfigDict, Field, PositiveInt, ValidationError

from catalog.did_you_mean import with_suggestion
from catalog.errors import StepsError
from catalog.model_errors import findings_from
from runners.rl_prep.transforms import COMPATIBLE

UNSET = "???"
PARALLEL_FROM_BYTES = 64 << 20  # below this, worker start-up costs more than it saves
MAX_WORKERS = 1024  # more is a typo: each worker is a process (the run also caps at the CPUs)
OUTPUT_TYPES = tuple(COMPATIBLE)
PATH_KEYS = ("blend_path", "output_dir")
KEY_FIELDS = (
    "output_type",
    "train_ratio",
    "val_ratio",
    "shard_size",
    "seed",
    "sample",
    "on_bad_row",
)

Ratio = Annotated[float, Field(ge=0.0, le=1.0)]
Size = Annotated[ByteSize, Field(gt=0)]

FIXES = {
    "blend_path": "set blend_path=PATH (a JSON or YAML blend; relative to the config's folder)",
    "output_dir": "set output_dir=PATH (a new folder, or one rl_prep wrote before)",
    "output_type": f"use one of: {', '.join(OUTPUT_TYPES)}",
    "train_ratio": "a share of each dataset between 0 and 1, e.g. train_ratio=0.98",
    "val_ratio": "a share of each dataset between 0 and 1, e.g. val_ratio=0.01",
    "shard_size": "e.g. shard_size=256MB (units: B, KB, MB, GB, KiB, MiB, GiB)",
    "seed": "an integer, e.g. seed=1234",
    "sample": "a positive row count, e.g. sample=1000, or null to read every row",
    "on_bad_row": "on_bad_row=error (stop at the first bad row) or on_bad_row=skip",
    "force": "force=true or force=false",
    "workers": f"a process count from 1 to {MAX_WORKERS}, e.g. workers=2, or null (one per "
    "CPU for big inputs); more than the CPUs this process may use runs as many as it may use",
}


class RlPrepConfig(BaseModel):
    """The rl_prep step config (config/default.yaml documents each key)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)

    blend_path: str = Field(min_length=1)
    output_dir: str = Field(min_length=1)
    output_type: Literal[OUTPUT_TYPES]  # type: ignore[valid-type]
    train_ratio: Ratio
    val_ratio: Ratio
    shard_size: Size
    seed: int
    sample: PositiveInt | None = None
    on_bad_row: Literal["error", "skip"]
    force: bool = False
    workers: Annotated[int, Field(ge=1, le=MAX_WORKERS)] | None = None


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: Slurm, `taskset`)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Problem:
    """One bad config value: the key, what is wrong, and how to fix it."""

    key: str
    message: str
    fix: str


def describe(err: Mapping[str, Any]) -> str:
    """A pydantic error as `expected ..., got <value>` (the value is what the user wrote)."""
    msg = str(err["msg"])
    if err["type"] == "extra_forbidden":
        return "unknown key"
    if err["type"] == "missing":
        return "is required"
    msg = msg[0].lower() + msg[1:] if msg else msg
    return f"{msg}, got {err.get('input')!r}"


def config_problems(config: Mapping[str, Any]) -> tuple[RlPrepConfig | None, list[Problem]]:
    """The validated config, or None and every problem (`???` paths are left to preflight's
    unresolved-values rule and to `read_options`)."""
    data = {**config, **{k: "unset" for k in PATH_KEYS if config.get(k) == UNSET}}
    try:
        model = RlPrepConfig.model_validate(data)
    except ValidationError as exc:
        found = findings_from(
            exc, code="E-CONFIG-VALUE", data=data, message=lambda err, _: describe(err)
        )
        return None, [Problem(f.key or "config", f.message, _fix(f.key or "config")) for f in found]
    return model, []


def _fix(key: str) -> str:
    return FIXES.get(key) or with_suggestion(key, FIXES, f"rl_prep's keys: {', '.join(FIXES)}")


def _bad(problem: Problem) -> StepsError:
    return StepsError(
        "E-CONFIG-VALUE", f"{problem.key}: {problem.message}", key=problem.key, fix=problem.fix
    )


@dataclass(frozen=True)
class Options:
    """The step config, checked, merged with the blend's settings, paths resolved."""

    blend_path: Path
    output_dir: Path
    output_type: str
    train_ratio: float
    val_ratio: float
    shard_size: int
    seed: int
    sample: int | None
    on_bad_row: str
    force: bool
    workers: int | None = None

    def workers_for(self, input_bytes: int) -> int:
        """Worker processes: as configured, at most one per usable CPU (more only compete and each
        holds its memory); else one per CPU for inputs worth it."""
        if self.workers is not None:
            return min(self.workers, usable_cpus())
        return usable_cpus() if input_bytes >= PARALLEL_FROM_BYTES else 1

    def key_fields(self) -> dict:
        """The options that change the output (and so belong in the run key)."""
        return {k: getattr(self, k) for k in KEY_FIELDS}


def config_path(config: Mapping[str, Any], key: str, config_dir: Path) -> Path:
    """A path key of the config, resolved against the config's folder; `???` is an error."""
    value = config.get(key)
    if not isinstance(value, str) or not value or value == UNSET:
        raise _bad(Problem(key, f"a path is required, got {value!r}", FIXES[key]))
    path = Path(value).expanduser()
    return path if path.is_absolute() else (config_dir / path)


def ratio_problem(train: float, val: float) -> str | None:
    """Why a train/val split is impossible, or None."""
    if train + val > 1.0 + 1e-9 or train <= 0.0:
        return (
            f"train_ratio {train} + val_ratio {val} must be at most 1 with train_ratio > 0 "
            "(test gets the rest)"
        )
    return None


def read_options(config: Mapping[str, Any], blend: Any, config_dir: Path, force: bool) -> Options:
    """Check the config, then merge the blend's settings over it (the blend wins)."""
    blend_path = config_path(config, "blend_path", config_dir)
    output_dir = config_path(config, "output_dir", config_dir)
    model, problems = config_problems(config)
    if model is None:
        raise _bad(problems[0])
    train = blend.options.get("train_ratio", model.train_ratio)
    val = blend.options.get("val_ratio", model.val_ratio)
    problem = ratio_problem(train, val)
    if problem is not None:
        in_blend = {"train_ratio", "val_ratio"} & blend.options.keys()
        raise StepsError(
            "E-BLEND" if in_blend else "E-CONFIG-VALUE",
            f"split ratios in {'the blend' if in_blend else 'the config'}: {problem}",
            path=str(blend.path) if in_blend else None,
            line=blend.lines.get(sorted(in_blend)[0]) if in_blend else None,
            key="train_ratio",
            fix="e.g. train_ratio=0.98 val_ratio=0.01",
        )
    settings = {**model.model_dump(exclude={*PATH_KEYS, "force"}), **blend.options}
    return Options(blend_path, output_dir, force=bool(force or model.force), **settings)
