"""The checks every run needs: nothing left `???`, NeMo-RL's sections present, inputs exist."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from catalog.errors import Finding
from catalog.nemo_rl_version import in_range
from runners.config.compiler import RESOLVER_VERSIONS
from runners.preflight import PreflightContext, rule
from runners.preflight.topology import finding, located, strings, where

_RESOLVER_CALL = re.compile(r"\$\{\s*([A-Za-z_][\w]*)\s*:")

# Top-level sections NeMo-RL's MasterConfig requires. Nested keys are the schema's (required
# ones) or setup_indexed_keys' (optional in the schema, read directly): one finding per cause.
REQUIRED: dict[str, tuple[str, ...]] = {
    "grpo": ("policy", "loss_fn", "env", "data", "grpo", "logger", "cluster", "checkpointing"),
    "dpo": ("policy", "data", "dpo", "logger", "cluster", "checkpointing"),
}


def _missing_keys(node: Any, prefix: str = "") -> Iterable[str]:
    """Dotted keys whose value is still `???` in plain data (the raw config, where `???`
    survives: OmegaConf gives a missing value or section as `???`)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _missing_keys(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _missing_keys(v, f"{prefix}.{i}")
    elif node == "???":
        yield prefix


@rule("unresolved_values", needs=())
def unresolved_values(ctx: PreflightContext) -> Iterable[Finding]:
    """No `???` may reach the run: NeMo-RL would read it as the literal string '???'."""
    source = ctx.raw() if ctx.compiled is not None else ctx.config
    for key in _missing_keys(source):
        yield located(
            ctx,
            "E-CONFIG-UNRESOLVED",
            key,
            f"{key} is '???' (a value you must give)",
            f"pass {key}=VALUE on the command line or set it in your config",
        )


@rule("config_resolvers", needs=("nemo_rl_config",))
def config_resolvers(ctx: PreflightContext) -> Iterable[Finding]:
    """E-CONFIG-INTERPOLATION: `${name:...}` only for resolvers the checkout's version registers
    (NeMo-RL raises UnsupportedInterpolationType in load_config otherwise)."""
    version = ctx.nemo_rl_version
    if ctx.compiled is None or version is None:
        return
    for key, text in strings(ctx.raw()):
        for name in _RESOLVER_CALL.findall(text):
            since = RESOLVER_VERSIONS.get(name)
            if since is None or in_range(version, since):
                continue  # oc.env and OmegaConf's own resolvers, or a registered one
            have = ", ".join(n for n, r in RESOLVER_VERSIONS.items() if in_range(version, r))
            yield finding(
                ctx,
                "E-CONFIG-INTERPOLATION",
                key,
                f"NeMo-RL {version.label} does not register the ${{{name}:...}} resolver (it "
                f"has {have}): the run fails in load_config",
                f"write the value out, or use one of {have}",
            )


@rule("required_sections", needs=("nemo_rl_config",))
def required_sections(ctx: PreflightContext) -> Iterable[Finding]:
    """Every section NeMo-RL's MasterConfig for `[run].algorithm` requires is present."""
    algorithm = ctx.manifest.run.algorithm if ctx.manifest is not None else None
    for key in missing_sections(ctx):
        value = ctx.get(key)
        yield Finding(
            "E-CONFIG-SECTION",
            f"{key} {'is null' if value is None and key in ctx.config else 'is missing'}; "
            f"NeMo-RL's {str(algorithm).upper()} MasterConfig requires it",
            path=where(ctx, key)[0],
            key=key,
            fix=f"restore {key} from the step's config/default.yaml (to replace a section "
            "use `~key +key={...}` rather than deleting it)",
        )


def missing_sections(ctx: PreflightContext) -> list[str]:
    """The required top-level sections that are absent or null (the schema rule leaves them
    to required_sections)."""
    algorithm = ctx.manifest.run.algorithm if ctx.manifest is not None else None
    return [k for k in REQUIRED.get(algorithm or "", ()) if ctx.get(k) is None]


@rule("inputs_exist", needs=())
def inputs_exist(ctx: PreflightContext) -> Iterable[Finding]:
    """Every consumed file or folder bound to a path exists before anything starts."""
    from catalog.shell_variables import path_variables
    from runners.preflight.data_paths import found_only_beside

    for art in ctx.inputs:
        if not art.is_path or art.value == "???" or found_only_beside(ctx, art):
            continue  # found only beside its config: E-INPUT-RELATIVE says so
        if path_variables(art.written or art.value):
            continue  # `$DATA/x.jsonl`: E-SHELL-VARIABLE names the cause
        if not art.value:
            yield located(
                ctx,
                "E-INPUT-MISSING",
                art.config_key,
                f"input '{art.name}' ({art.type}) is required but {art.config_key} is null",
                f"pass {art.config_key}=PATH or --input {art.name}=PATH",
            )
        elif ctx.remote is not None and (art.value in ctx.remote.exists or not ctx.remote.reached):
            continue  # judged where the job runs (runners.preflight.remote), or not reachable
        elif not os.path.exists(art.value):
            yield located(
                ctx,
                "E-INPUT-MISSING",
                art.config_key,
                f"input '{art.name}' ({art.type}) does not exist: {art.value}",
                "check the path; NeMo-RL opens a config file's relative paths from its checkout "
                "root (rl_prep and the converters: from that file's folder), paths on the "
                "command line are read from the current directory",
            )
