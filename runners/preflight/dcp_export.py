"""The DCP export's own checks: `convert_dcp_to_hf.py` refuses an existing hf_path, and loads the
base model (`policy.model_name`) only after writing the weights: a missing one half-writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from catalog.artifact_paths import HUB_ID
from catalog.errors import Finding
from catalog.yamlfile import read_data
from runners.nemo_rl.dcp_export import CODE, CheckpointConfig, exists, step_folder
from runners.preflight import PreflightContext, rule


@rule("dcp_export", needs=("dcp_export",))
def dcp_export(ctx: PreflightContext) -> Iterator[Finding]:
    """E-DCP-EXPORT: a fresh hf_path, and the base model the checkpoint's config.yaml names."""
    hf_path = next((o.value for o in ctx.outputs if o.name == "hf"), ctx.get("hf_path"))
    out = Path(hf_path) if isinstance(hf_path, str) else None
    if out is not None and out.exists() and not (out / "config.json").is_file():
        yield exists(out)  # a finished export (config.json) is skipped, or refused with --force
    src = next((i.value for i in ctx.inputs if i.name == "checkpoint"), None)
    if not src or not Path(src).is_dir():
        return  # inputs_exist / artifact_contracts report it
    config = step_folder(src) / "config.yaml"
    if not config.is_file():
        return  # artifact_contracts reports it
    import yaml

    try:
        policy = CheckpointConfig.model_validate(read_data(config)).policy
    except (OSError, ValueError, yaml.YAMLError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        yield Finding(CODE, f"{config}: no readable policy.model_name ({first})", str(config))
        return
    name = policy.model_name
    local = name.startswith(("/", "./", "../", "~")) or not HUB_ID.match(name)
    model = Path(name).expanduser()
    if not model.is_absolute() and ctx.nemo_rl_dir is not None:
        model = ctx.nemo_rl_dir / model  # the converter runs from the checkout
    if local and not model.exists():
        yield Finding(
            CODE,
            f"policy.model_name in {config} is {name!r}, a folder that does not exist here: the "
            "converter loads the base model's config.json from it (and would fail after "
            "writing the weights)",
            str(config),
            key="policy.model_name",
            fix="make that folder reachable at the same path (the model the run started from), "
            "then export",
        )
