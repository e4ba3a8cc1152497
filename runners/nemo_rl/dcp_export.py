"""The `dcp_to_hf` runner: a DTensor (torch DCP) checkpoint exported by NeMo-RL's own
`examples/converters/convert_dcp_to_hf.py`, run from the checkout like a NeMo-RL step.

It takes `--config <step_N>/config.yaml --dcp-ckpt-path <step_N>/policy/weights --hf-ckpt-path
OUT` (v0.6.0 to the pin), refuses an existing OUT and fails after writing the weights when
the base model (`policy.model_name` of that config) is unreachable: both are checked before
launch (`runners.preflight.dcp_export`).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from catalog.errors import Finding

CODE = "E-DCP-EXPORT"


class _Named(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str | None = None


class _Policy(BaseModel):
    model_config = ConfigDict(extra="allow")
    model_name: str
    tokenizer: _Named | None = None


class CheckpointConfig(BaseModel):
    """The part of a NeMo-RL checkpoint's config.yaml the converter reads."""

    model_config = ConfigDict(extra="allow")
    policy: _Policy


def step_folder(dcp_path: str) -> Path:
    """The step_N folder to export: the latest complete one of a checkpoint_dir, or the folder
    itself (a step_N, or a path this machine cannot read: the job resolves nothing more)."""
    from catalog.contracts.checkpoints import check_nemo_rl

    path = Path(dcp_path)
    found = check_nemo_rl(path).resolved if path.is_dir() else None
    return found or path


def converter_args(config: Mapping[str, Any]) -> list[str]:
    """The converter's three options for the step folder `dcp_path` names."""
    step = step_folder(str(config.get("dcp_path")))
    return [
        "--config",
        str(step / "config.yaml"),
        "--dcp-ckpt-path",
        str(step / "policy" / "weights"),
        "--hf-ckpt-path",
        str(config.get("hf_path")),
    ]


def launch_argv(launcher: str, script: str, config: Mapping[str, Any]) -> list[str]:
    """The job's argv on a cluster: the profile's launcher, the script, the options."""
    return [*shlex.split(launcher), script, *converter_args(config)]


def plan(
    config: Mapping[str, Any], command: Callable[[str, str], list[str]], script: str, force: bool
) -> tuple[list[str] | None, list[Finding], str | None]:
    """(argv, findings, skip message) of a local export; `command` builds the launcher's argv."""
    hf_path = Path(str(config.get("hf_path")))
    if (hf_path / "config.json").is_file():
        if not force:
            return (
                None,
                [],
                f"{hf_path} already holds config.json: conversion skipped (remove it and pass "
                "--force to export again)",
            )
        return None, [exists(hf_path)], None
    args = converter_args(config)
    return [*command(script, args[1]), *args[2:]], [], None


def exists(hf_path: Path) -> Finding:
    return Finding(
        CODE,
        f"hf_path {hf_path} exists: NeMo-RL's converter refuses an existing folder",
        key="hf_path",
        fix="remove it (a failed export leaves a half-written one) or choose a new hf_path",
    )
