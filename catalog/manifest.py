"""The `step.toml` model: strict pydantic, unknown keys rejected, exported as a JSON Schema."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from catalog.errors import Finding
from catalog.model_errors import file_lines, findings_from, line_of

SCHEMA_PATH = Path(__file__).parent / "schema" / "step.schema.json"
STEP_ID = r"^[a-z0-9_]+(/[a-z0-9_]+)+$"
ERROR_CODE = r"^[EW]-[A-Z0-9]+(-[A-Z0-9]+)*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StepInfo(_Strict):
    id: str = Field(pattern=STEP_ID, description="Folder path under a catalog root.")
    name: str = Field(min_length=1)
    category: str = Field(min_length=1, description="Equals the first folder of the id.")
    description: str = Field(min_length=1)
    tags: list[str] = []
    version: str = Field(pattern=r"^\d+\.\d+\.\d+$")


class RunSpec(_Strict):
    """How the shared runner launches the step."""

    runner: str = Field(
        pattern=r"^[a-z][a-z0-9_]*$",
        description="The runner kind: a module of runners/kinds (nemo_rl, rl_prep, ...).",
    )
    algorithm: Literal["grpo", "dpo"] | None = Field(
        None, description="NeMo-RL MasterConfig the compiled config must satisfy."
    )
    script: str | None = Field(None, description="Upstream script, relative to the checkout.")
    gym_script: str | None = Field(
        None, description="Script used instead when env.should_use_nemo_gym is true."
    )
    default_config: str = "default"


class Port(_Strict):
    """A consumed or produced artifact and the config keys that hold its path."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    type: str
    description: str = Field(min_length=1)
    required: bool = True
    config_keys: list[str] = Field(min_length=1)
    type_key: str | None = Field(
        None, description="Config key whose value narrows `type` to one of its subtypes."
    )
    type_map: dict[str, str] | None = Field(
        None,
        description="With type_key: the subtype each value of that key selects (YAML true/false "
        "as 'true'/'false'), for keys whose values are not type names.",
    )
    parameter: bool = Field(
        False,
        description="When no artifact is wired, the config key is given directly as a "
        "parameter (e.g. an HF hub id or folder); compose needs no producer for it.",
    )


class Parameter(_Strict):
    name: str = Field(description="Dotted key that exists in the default config.")
    description: str = Field(min_length=1)
    default: Any = None


class Strategy(_Strict):
    when: str = Field(min_length=1)
    then: str = Field(min_length=1)


class ErrorNote(_Strict):
    """What differs for this step about a code; catalog/codes.toml holds the rest."""

    description: str | None = Field(
        None, min_length=1, description="This step's own meaning (else the registry's)."
    )
    recovery: str | None = Field(
        None, min_length=1, description="This step's own fix (else the registry's)."
    )
    check: str | None = Field(
        None, description="Preflight rule that raises it before launch (else the registry's)."
    )


class ErrorSpec(ErrorNote):
    name: str = Field(pattern=ERROR_CODE, description="The code a finding carries.")


Code = Annotated[str, StringConstraints(pattern=ERROR_CODE)]


class Reference(_Strict):
    upstream: list[str] = Field(
        default=[], description="Files in the pinned upstream repositories."
    )
    docs: list[str] = []
    local: list[str] = Field(
        default=[], description="Paths relative to the step folder; must exist."
    )


class StepManifest(_Strict):
    step: StepInfo
    run: RunSpec
    consumes: list[Port] = []
    produces: list[Port] = []
    parameters: list[Parameter] = []
    strategies: list[Strategy] = []
    errors: dict[Code, ErrorNote] | list[ErrorSpec] = Field(
        {},
        description="What is particular to this step about a code registered in "
        "catalog/codes.toml: a table with only what differs (description, recovery, check), or "
        "`CODE = {}` for a code no rule of its runner kind raises (those are derived). (The "
        "older list of [[errors]] tables with a name each is read too.)",
    )
    reference: Reference = Reference()

    @property
    def error_specs(self) -> list[ErrorSpec]:
        """Every entry of `errors` with its code as `name`."""
        if isinstance(self.errors, list):
            return list(self.errors)
        return [ErrorSpec(name=k, **v.model_dump()) for k, v in self.errors.items()]

    def error(self, name: str) -> ErrorSpec | None:
        """The code as this step knows it: its own text where it has some, else the registry's;
        None when the step does not list it."""
        own = next((e for e in self.error_specs if e.name == name), None)
        if own is None:
            return None
        from catalog.codes import registry

        entry = registry().get(name)
        if entry is None:
            return own
        return ErrorSpec(
            name=name,
            description=own.description or entry.meaning,
            recovery=own.recovery or entry.fix,
            check=own.check or entry.check,
        )

    def port(self, name: str) -> Port | None:
        return next((p for p in [*self.consumes, *self.produces] if p.name == name), None)


def parse_manifest(data: dict, path: Path) -> tuple[StepManifest | None, list[Finding]]:
    """Validate raw TOML data; every schema violation becomes a finding with its line."""
    try:
        return StepManifest.model_validate(data), []
    except ValidationError as exc:
        lines = file_lines(path)
        return None, findings_from(
            exc,
            code="E-MANIFEST-SCHEMA",
            path=path,
            data=data,
            locate=lambda loc: line_of(lines, *loc),
            fix=f"see {SCHEMA_PATH.name} for the allowed keys and types",
        )


@functools.cache
def json_schema_text() -> str:
    """The schema file's exact text (the `check` gate compares it byte for byte); it follows
    from the code alone, so one process builds it once."""
    schema = StepManifest.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "step.toml"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
