"""The pipeline file (YAML, strict pydantic): named inputs, stages wired by reference, targets.

A reference is a plain string: `inputs.<name>`, or `<stage>.<port>` (a bare `<stage>`: its only
fitting output). Every key's line is kept for the planner's findings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from catalog.errors import Finding, StepsError
from catalog.model_errors import dotted, error_from, line_of
from catalog.yamlfile import load_yaml

SCHEMA_PATH = Path(__file__).parent / "schema" / "pipeline.schema.json"
STAGE_ID = r"^[a-z][a-z0-9_]*$"
UNSET = "???"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PipelineInput(_Strict):
    """An artifact the pipeline starts from."""

    type: str = Field(description="Artifact type from types.toml (e.g. data_blend).")
    path: str = Field(
        description="File, folder or (for hf_checkpoint) a hub id; relative to this file's "
        "folder. '???' means not chosen yet: `plan` warns, `pipeline run` stops."
    )
    description: str | None = None


class Stage(_Strict):
    """One step run: which step, which config, and where each consumed port comes from."""

    id: str = Field(pattern=STAGE_ID, description="Unique in the pipeline; names its folder.")
    step: str = Field(description="Step id, or a unique tail of it (e.g. rlvr).")
    config: str | None = Field(
        None,
        description="Config name in the step's config/ folder, or a YAML path relative "
        "to this file. Default: the step's run.default_config.",
    )
    overrides: list[str] = Field([], description="Hydra overrides (a.b=v, +a=v, ~a).")
    inputs: dict[str, str] = Field(
        {}, description="Consumed port -> 'inputs.<name>', '<stage>.<port>' or '<stage>'."
    )
    profile: str | None = Field(
        None,
        description="env.toml profile this stage runs with under `pipeline run --batch/--run` "
        "(e.g. a CPU partition for data prep); default: the command line's.",
    )
    until_done: bool = Field(
        False,
        description="On a cluster: train to the end across segments (a chain, docs/chains.md); "
        "the stages after it wait for the chain's end.",
    )
    dry_run: bool = Field(
        False,
        description="Check this stage, never launch it: `pipeline run` runs `steps run STEP "
        "--dry-run` on what the stages before it wrote (every contract decided before the GPUs "
        "start) and records it as checked. It makes no output, so no stage or target reads one; "
        "the way to end a pipeline on a machine without GPUs.",
    )
    max_segments: int | None = Field(None, ge=1, description="With until_done: at most N segments.")
    gpu_hours: float | None = Field(None, gt=0, description="With until_done: a GPU-hour budget.")
    description: str | None = None


class Target(_Strict):
    """A pipeline output; with `type`, the planner converts it to that type if it must."""

    output: str = Field(description="'<stage>.<port>'.")
    type: str | None = Field(None, description="Wanted type; a converter is inserted if needed.")


class ConverterSettings(_Strict):
    """Config for converter stages the planner inserts (keyed by converter step id)."""

    config: str | None = None
    overrides: list[str] = []


class Lineage(_Strict):
    wandb: bool = Field(default=False, description="Log stage outputs and inputs as W&B artifacts.")
    project: str | None = None
    entity: str | None = None


class Pipeline(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", description="Names the run root.")
    description: str | None = None
    root: str | None = Field(
        None, description="Run root (relative to this file). Default: <runs dir>/pipelines/<name>."
    )
    inputs: dict[str, PipelineInput] = {}
    stages: list[Stage] = Field(min_length=1)
    targets: list[str | Target] = Field(
        [], description="'<stage>.<port>' or {output, type}: what the pipeline is for."
    )
    converters: dict[str, ConverterSettings] = {}
    lineage: Lineage = Lineage()


@dataclass
class PipelineFile:
    """A parsed pipeline and where each key sits in its file."""

    model: Pipeline
    path: Path
    lines: dict[tuple, int] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path.parent

    def line(self, *keys: Any) -> int | None:
        """Line of the deepest key of `keys` that the file has (falls back to its parents)."""
        return line_of(self.lines, *keys)

    def finding(self, code: str, message: str, *keys: Any, fix: str | None = None, **kw) -> Finding:
        return Finding(code, message, path=str(self.path), line=self.line(*keys), fix=fix, **kw)


def load_pipeline(path: str | Path) -> PipelineFile:
    """Parse and validate a pipeline file; bad YAML or keys raise E-PIPELINE-* at file:line."""
    path = Path(path)
    data, lines, _ = load_yaml(
        path,
        what="pipeline file",
        read_code="E-PIPELINE-FILE",
        syntax_code="E-PIPELINE-YAML",
        fix="give the path of a readable pipeline YAML file",
    )
    if not isinstance(data, dict):
        raise StepsError(
            "E-PIPELINE-SCHEMA",
            "a pipeline file is a mapping with name, inputs, stages, targets",
            path=str(path),
            line=1,
            fix=f"see {SCHEMA_PATH.name}",
        )
    try:
        model = Pipeline.model_validate(data)
    except ValidationError as exc:
        more = len(exc.errors()) - 1
        raise error_from(
            exc,
            code="E-PIPELINE-SCHEMA",
            path=path,
            data=data,
            locate=lambda loc: line_of(lines, *loc),
            message=lambda err, loc: (
                f"{dotted(loc) or 'pipeline'}: {err['msg']}"
                + (f" (and {more} more)" if more else "")
            ),
            fix=f"see {SCHEMA_PATH.name} for the allowed keys and types",
        ) from None
    return PipelineFile(model, path.resolve(), lines)


def json_schema_text() -> str:
    """The published schema's exact text (a test compares it byte for byte)."""
    schema = Pipeline.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "pipeline file"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
