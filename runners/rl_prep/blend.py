"""The blend file: which datasets to prepare, how to weight and transform them, how to split.

JSON or YAML (one YAML loader, so every error names its line), checked by the strict model
`BlendFile`; steps/data_prep/rl_prep/README.md documents each key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError, field_validator

from catalog.did_you_mean import close_matches
from catalog.errors import StepsError
from catalog.model_errors import first_error, line_of
from catalog.yamlfile import Lines, load_yaml
from runners.rl_prep.options import FIXES, Ratio, Size, describe
from runners.rl_prep.spec import DatasetSpec, PlaceholderSource
from runners.rl_prep.transforms import TRANSFORMS, parse_path

BLEND_FIX = "see steps/data_prep/rl_prep/README.md for the blend format"
AGENT_TYPE = "responses_api_agents"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class AgentRef(_Strict):
    type: str = AGENT_TYPE
    name: str = Field(min_length=1)


PathText = Annotated[str, Field(min_length=1)]


def _dotted(value: str, targets_only: bool = False) -> str:
    parse_path(value, targets_only)  # ValueError says what is wrong
    return value


class PlaceholderEntry(_Strict):
    """Where one source that `_hf_placeholder` rows point into lives, as a local copy."""

    path: PathText | list[PathText]
    split: str = "train"
    subset: str | None = None
    question: PathText = "prompt.0.content"
    answer: PathText = "reward_model.ground_truth"
    template: Literal["dapo", "skywork", "none"] = "none"

    @field_validator("question", "answer")
    @classmethod
    def _paths(cls, value: str) -> str:
        return _dotted(value)


class DatasetEntry(_Strict):
    """One `datasets:` item as written in the file."""

    name: str = Field(min_length=1, pattern=r"\S")
    path: Annotated[str, Field(min_length=1)] | list[Annotated[str, Field(min_length=1)]]
    split: str = "train"
    subset: str | None = None
    weight: Annotated[float, Field(ge=0.0)] = 1.0
    sample: PositiveInt | None = None
    transform: str | None = None
    agent_ref: Annotated[str, Field(min_length=1)] | AgentRef | None = None
    description: str | None = None
    map: dict[str, PathText] | None = None
    hf_placeholders: dict[str, PlaceholderEntry] | None = None

    @field_validator("map")
    @classmethod
    def _map_paths(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for target, source in (value or {}).items():
            _dotted(target, targets_only=True)
            _dotted(source)
        return value

    @field_validator("path")
    @classmethod
    def _some_path(cls, value: Any) -> Any:
        if isinstance(value, list) and not value:
            raise ValueError("give at least one file, glob, directory or hf://org/name")
        return value

    @field_validator("transform")
    @classmethod
    def _known_transform(cls, value: str | None) -> str | None:
        if value is not None and value not in TRANSFORMS:
            raise ValueError(f"unknown transform `{value}`")
        return value


class BlendFile(_Strict):
    """The whole blend file."""

    datasets: list[DatasetEntry] = Field(min_length=1)
    seed: int | None = None
    train_ratio: Ratio | None = None
    val_ratio: Ratio | None = None
    shard_size: Size | None = None
    description: str | None = None


@dataclass(frozen=True)
class Blend:
    path: Path
    sha256: str
    datasets: tuple[DatasetSpec, ...]
    options: dict[str, Any] = field(default_factory=dict)  # seed/ratios/shard_size it sets
    lines: dict[str, int] = field(default_factory=dict)  # top-level key -> line


def _fail(path: Path, message: str, line: int | None = None, fix: str = BLEND_FIX) -> StepsError:
    return StepsError("E-BLEND", message, path=str(path), line=line, fix=fix)


def _schema_error(path: Path, exc: ValidationError, data: Any, lines: Lines) -> StepsError:
    """The first problem, worded for the blend's author, at its line."""
    err = first_error(exc)
    loc = tuple(err["loc"])
    keys = loc[: 3 if loc[:1] == ("datasets",) else 1]  # drop union branch names
    where = "blend"
    if loc[:1] == ("datasets",) and len(loc) > 1 and isinstance(loc[1], int):
        item = data["datasets"][loc[1]]
        name = item.get("name") if isinstance(item, dict) else None
        named = isinstance(name, str) and name.strip()
        where = f"datasets[{loc[1]}]" + (f" ({name})" if named else "")
    leaf = str(keys[-1]) if keys and not isinstance(keys[-1], int) else ""
    line = line_of(lines, *keys)
    if leaf == "hf_placeholders" and len(loc) > 4:  # inside one source's entry
        inner = ".".join(str(p) for p in loc[2:5])
        at = line_of(lines, *loc[:4]) or line
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(PlaceholderEntry.model_fields))
            return _fail(path, f"{where}.{inner}: unknown key", at, f"allowed keys: {allowed}")
        return _fail(path, f"{where}.{inner}: {describe(err)}", at)
    if err["type"] == "extra_forbidden":
        allowed = sorted((DatasetEntry if len(keys) > 1 else BlendFile).model_fields)
        near = close_matches(leaf, allowed, n=1)
        hint = f"did you mean `{near[0]}`? " if near else ""
        fix = f"{hint}allowed keys: {', '.join(allowed)}"
        return _fail(path, f"{where}: unknown key `{leaf}`", line, fix)
    if leaf == "transform":
        value = str(err.get("input"))
        near = close_matches(value, TRANSFORMS, n=1)
        hint = f"did you mean `{near[0]}`? " if near else ""
        return _fail(
            path,
            f"{where}.transform: unknown transform `{value}`",
            line,
            f"{hint}use one of: {', '.join(TRANSFORMS)}",
        )
    if leaf == "agent_ref":
        return _fail(
            path,
            f"{where}.agent_ref: expected an agent name or {{type, name}}, "
            f"got {err.get('input')!r}",
            line,
            "write `agent_ref: <agent instance name>` as named in your Gym config",
        )
    if leaf == "path":
        return _fail(
            path,
            f"{where}: `path` is required: a file, glob, directory, list of those, or hf://org/name",
            line,
        )
    if keys == ("datasets",):
        return _fail(path, "`datasets` must be a non-empty list", line)
    if not leaf:
        return _fail(path, f"{where}: expected a mapping with name and path", line)
    if leaf == "name":
        return _fail(path, f"{where}: `name` is required (a non-empty string)", line)
    if len(keys) == 1:  # a top-level setting that overrides the step config's
        return _fail(path, f"{leaf}: {describe(err)}", line, FIXES.get(leaf, BLEND_FIX))
    return _fail(path, f"{where}.{leaf}: {describe(err)}", line)


def _paths(path: str | list[str]) -> tuple[str, ...]:
    return (path,) if isinstance(path, str) else tuple(path)


def _spec(entry: DatasetEntry, line: int | None) -> DatasetSpec:
    ref = AgentRef(name=entry.agent_ref) if isinstance(entry.agent_ref, str) else entry.agent_ref
    return DatasetSpec(
        name=entry.name,
        paths=_paths(entry.path),
        line=line,
        weight=float(entry.weight),
        split=entry.split or "train",
        subset=entry.subset,
        sample=entry.sample,
        transform=entry.transform,
        agent_ref=ref.model_dump() if ref else None,
        field_map=tuple((entry.map or {}).items()),
        placeholders=tuple(
            PlaceholderSource(name, _paths(p.path), **p.model_dump(exclude={"path"}))
            for name, p in (entry.hf_placeholders or {}).items()
        ),
    )


def load_blend(path: Path) -> Blend:
    """Parse and check a blend file: every problem is E-BLEND at its line (exit 2: unreadable)."""
    data, lines, raw = load_yaml(
        path,
        what="blend",
        read_code="E-BLEND",
        syntax_code="E-BLEND",
        fix="set blend_path to a readable JSON or YAML blend",
    )
    if not isinstance(data, dict):
        raise _fail(path, "expected a mapping with a `datasets` list", 1)
    try:
        model = BlendFile.model_validate(data)
    except ValidationError as exc:
        raise _schema_error(path, exc, data, lines) from None
    specs = [_spec(d, lines.get(("datasets", i))) for i, d in enumerate(model.datasets)]
    seen: dict[str, int | None] = {}
    for spec in specs:
        if spec.name in seen:
            raise _fail(
                path,
                f"dataset name `{spec.name}` is used twice (first at line {seen[spec.name]})",
                spec.line,
                fix="give every dataset a unique name",
            )
        seen[spec.name] = spec.line
    options = {
        k: int(v) if k == "shard_size" else v
        for k in ("seed", "train_ratio", "val_ratio", "shard_size")
        if (v := getattr(model, k)) is not None
    }
    return Blend(
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        datasets=tuple(sorted(specs, key=lambda s: s.name)),
        options=options,
        lines={str(k[0]): n for k, n in lines.items() if len(k) == 1},
    )
