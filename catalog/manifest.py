"""The `step.toml` model: strict pydantic, unknown keys rejected, exported as a JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from catalog.errors import Finding
from catalog.tomlfile import line_of

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

    runner: Literal["nemo_rl", "rl_prep", "megatron_to_hf", "dcp_to_hf"]
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


class ErrorSpec(_Strict):
    name: str = Field(pattern=ERROR_CODE, description="The code a finding carries.")
    description: str = Field(min_length=1)
    recovery: str = Field(min_length=1)
    check: str | None = Field(None, description="Preflight rule that raises it before launch.")


class Reference(_Strict):
    upstream: list[str] = Field([], description="Files in the pinned upstream repositories.")
    docs: list[str] = []
    local: list[str] = Field([], description="Paths relative to the step folder; must exist.")


class StepManifest(_Strict):
    step: StepInfo
    run: RunSpec
    consumes: list[Port] = []
    produces: list[Port] = []
    parameters: list[Parameter] = []
    strategies: list[Strategy] = []
    errors: list[ErrorSpec] = []
    reference: Reference = Reference()

    def error(self, name: str) -> ErrorSpec | None:
        return next((e for e in self.errors if e.name == name), None)

    def port(self, name: str) -> Port | None:
        return next((p for p in [*self.consumes, *self.produces] if p.name == name), None)


def parse_manifest(data: dict, path: Path) -> tuple[StepManifest | None, list[Finding]]:
    """Validate raw TOML data; every schema violation becomes a finding with its line."""
    try:
        return StepManifest.model_validate(data), []
    except ValidationError as exc:
        findings = []
        for err in exc.errors():
            loc = [str(p) for p in err["loc"]]
            key = ".".join(loc)
            needle = next((p for p in reversed(loc) if not p.isdigit()), "")
            line = line_of(path, needle) if needle else None
            findings.append(
                Finding(
                    "E-MANIFEST-SCHEMA",
                    f"{key}: {err['msg']}",
                    path=str(path),
                    line=line,
                    key=key,
                    fix=f"see {SCHEMA_PATH.name} for the allowed keys and types",
                )
            )
        return None, findings


def json_schema_text() -> str:
    """The schema file's exact text (the `check` gate compares it byte for byte)."""
    schema = StepManifest.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "step.toml"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
