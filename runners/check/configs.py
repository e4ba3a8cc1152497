"""Checks of a step's configs with NeMo-RL's own `load_config` semantics: every config loads,
its interpolations resolve, and the manifest names keys of the compiled default config."""

from __future__ import annotations

from typing import Any

from catalog.did_you_mean import close_keys, phrase
from catalog.discovery import StepEntry
from catalog.errors import WARNING, Finding, StepsError
from runners.check.manifests import StepUnderCheck, manifest_line
from runners.config.compiler import load_config, register_resolvers
from runners.config.override_apply import all_keys, has_key


def configs(s: StepUnderCheck) -> list[Finding]:
    """Every config of the step loads with NeMo-RL's semantics and its interpolations resolve."""
    e, m = s.entry, s.manifest
    out = []
    names = e.config_names()
    if m.run.default_config not in names:
        out.append(
            Finding(
                "E-CONFIG-NOT-FOUND",
                f"run.default_config '{m.run.default_config}' is not in config/",
                str(e.manifest_path),
                manifest_line(e, "default_config"),
                key="run.default_config",
                fix=f"add config/{m.run.default_config}.yaml or name one of {names}",
            )
        )
    for name in names:
        try:
            compiled = load_config(e.config_path(name))
        except StepsError as exc:
            out.append(exc.finding)
            continue
        out += _interpolations(compiled)
        if name == m.run.default_config:
            s.default, s.keys = compiled, all_keys(compiled.config)
    return out


def _interpolations(compiled) -> list[Finding]:
    """Resolve each interpolation on its own so one failure does not hide the next (an unset
    `${oc.env:VAR}` or a `???` is a warning: supplied at run time)."""
    from omegaconf import DictConfig, ListConfig
    from omegaconf.errors import InterpolationToMissingValueError

    from runners.omegaconf_internals import child_node, is_interpolation, raw_value

    register_resolvers()
    out = []

    def walk(node, prefix: str) -> None:
        items = list(node.keys()) if isinstance(node, DictConfig) else range(len(node))
        for k in items:
            key = f"{prefix}.{k}" if prefix else str(k)
            child = child_node(node, k)
            if is_interpolation(child):
                try:
                    node[k]
                except Exception as exc:
                    out.append(_interpolation_finding(compiled, key, child, exc))
            elif isinstance(child, (DictConfig, ListConfig)):
                walk(child, key)

    def _interpolation_finding(compiled, key, child, exc) -> Finding:
        path, line = compiled.locate(key)
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raw = str(raw_value(child))
        if "oc.env" in raw and "Environment variable" in text:
            return Finding(
                "W-CONFIG-ENV",
                f"{key}: {raw} needs an environment variable at run time ({text})",
                path,
                line,
                severity=WARNING,
                key=key,
                fix="export it before `run`, or give a default: ${oc.env:VAR,default}",
            )
        if isinstance(exc, InterpolationToMissingValueError):
            return Finding(
                "W-CONFIG-MISSING",
                f"{key}: {raw} refers to a value that must be supplied (???)",
                path,
                line,
                severity=WARNING,
                key=key,
            )
        return Finding(
            "E-CONFIG-INTERPOLATION",
            f"{key}: cannot resolve {raw}: {text}",
            path,
            line,
            key=key,
            fix="point the interpolation at an existing key or a registered resolver "
            "(add, mul, div, max, oc.env)",
        )

    walk(compiled.config, "")
    return out


def _missing_key(e: StepEntry, what: str, key: str, keys: list[str], code: str, at) -> Finding:
    hint = phrase(close_keys(key, keys))
    return Finding(
        code,
        f"{what} '{key}' is not a key of the default config",
        str(e.manifest_path),
        at,
        key=key,
        fix=f"{hint} name a key that exists in config/default.yaml (after `defaults:`)".strip(),
    )


def config_keys(s: StepUnderCheck) -> list[Finding]:
    """Ports, type keys and parameters name keys of the compiled default config."""
    e, m, cfg = s.entry, s.manifest, s.default.config
    out = []
    for p in [*m.consumes, *m.produces]:
        for key in p.config_keys:
            if not has_key(cfg, key):
                at = manifest_line(e, "config_keys", f'"{key}"') or manifest_line(e, f'"{key}"')
                out.append(
                    _missing_key(e, f"port '{p.name}' config key", key, s.keys, "E-PORT-KEY", at)
                )
        if p.type_key and not has_key(cfg, p.type_key):
            at = manifest_line(e, "type_key", f'"{p.type_key}"')
            out.append(
                _missing_key(e, f"port '{p.name}' type_key", p.type_key, s.keys, "E-TYPE-KEY", at)
            )
    for par in m.parameters:
        at = manifest_line(e, "name", f'"{par.name}"')
        if not has_key(cfg, par.name):
            out.append(_missing_key(e, "parameter", par.name, s.keys, "E-PARAM-KEY", at))
            continue
        if par.default is None:
            continue
        value = _value(cfg, par.name)
        if value != par.default:
            out.append(
                Finding(
                    "E-PARAM-DEFAULT",
                    f"parameter '{par.name}': manifest default {par.default!r} but the default "
                    f"config has {value!r}",
                    str(e.manifest_path),
                    at,
                    key=par.name,
                    fix="make the manifest default equal the value in config/default.yaml",
                )
            )
    return out


def _value(cfg, dotted: str) -> Any:
    """The key's value, resolved when it resolves (else its raw text)."""
    from omegaconf import DictConfig, ListConfig, OmegaConf
    from omegaconf.errors import MissingMandatoryValue

    try:
        value = OmegaConf.select(cfg, dotted, throw_on_missing=True)
    except MissingMandatoryValue:
        return "???"
    except Exception:
        value = OmegaConf.select(cfg, dotted, throw_on_resolution_failure=False)
    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=False)
    return value
