"""Hydra-style overrides applied as NeMo-RL's `parse_hydra_overrides` does (Hydra's own
`_apply_overrides_to_config`, a token at a time to name it in an error), in linear time:
OmegaConf.update's force-add lifts the parent's struct flag per set, clearing every child's
flag cache (n adds under one parent cost n^2: 50k `++unk.kN=v` took minutes), so a run of plain
adds under one section is applied as update does it, under one lift.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf, flag_override
from omegaconf.errors import OmegaConfBaseException

from catalog.did_you_mean import close_keys
from catalog.errors import StepsError
from runners.config.overrides import OverrideError, first_line, parse_overrides, redacted
from runners.omegaconf_internals import child_node, is_interpolation, is_missing, is_none


def all_keys(node: Any, prefix: str = "") -> list[str]:
    """Every dotted key in a config (mappings only; list items are values)."""
    out: list[str] = []
    if isinstance(node, (DictConfig, dict)):
        for k in node.keys() if isinstance(node, DictConfig) else node:
            key = f"{prefix}.{k}" if prefix else str(k)
            out.append(key)
            try:
                child = child_node(node, k) if isinstance(node, DictConfig) else node[k]
            except OmegaConfBaseException:
                continue
            if isinstance(child, (DictConfig, dict)):
                out.extend(all_keys(child, key))
    return out


def has_key(cfg: DictConfig, dotted: str) -> bool:
    node: Any = cfg
    for part in dotted.split("."):
        if isinstance(node, DictConfig) and child_node(node, part) is not None:  # `in` misses ???
            node = child_node(node, part)
        elif isinstance(node, ListConfig) and part.isdigit() and int(part) < len(node):
            node = child_node(node, int(part))
        else:
            return False
    return True


def apply_overrides(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """Apply Hydra-style overrides the way `parse_hydra_overrides` does, with clear errors."""
    if not overrides:
        return cfg
    parsed = parse_overrides(overrides)
    for ov in parsed:
        key = ov.key_or_group
        exists = has_key(cfg, key)
        token = redacted(ov.input_line)[0]
        if ov.is_add() and exists:
            raise OverrideError(
                ov.input_line,
                "E-OVERRIDE-KEY",
                f"override '{token}': key '{key}' already exists",
                key=key,
                fix=f"use {key}=... to change it, or ++{key}=... to add-or-change",
            )
        if (ov.is_delete() or not (ov.is_add() or ov.is_force_add())) and not exists:
            near = close_keys(key, all_keys(cfg))
            hint = f"did you mean {' or '.join(near)}? " if near else ""
            verb = "delete" if ov.is_delete() else "set"
            add = "" if ov.is_delete() else f"to add a new key use +{key}=..."
            raise OverrideError(
                ov.input_line,
                "E-OVERRIDE-KEY",
                f"override '{token}': cannot {verb} '{key}': no such key in the config",
                key=key,
                fix=(hint + add).strip() or "check the key path",
            )
    OmegaConf.set_struct(cfg, True)
    try:
        _apply_all(parsed, cfg)
    finally:
        OmegaConf.set_struct(cfg, False)
    return cfg


def _apply_error(ov: Any, exc: BaseException) -> StepsError:
    fix = (
        f"Hydra cannot delete a key whose value is null; set it instead ({ov.key_or_group}=...)"
        if ov.is_delete()
        else "a dict value merges into an existing section and cannot add keys to "
        "it; to replace a section use `~key +key={...}`"
    )
    shown, detail = redacted(ov.input_line, first_line(exc))
    return OverrideError(
        ov.input_line,
        "E-OVERRIDE-APPLY",
        f"cannot apply override '{shown}': {detail}",
        key=ov.key_or_group,
        fix=fix,
    )


def _child(node: DictConfig, key: str) -> Any:
    """`child_node`, None for a key a struct section does not have (it raises for it)."""
    try:
        return child_node(node, key)
    except OmegaConfBaseException:
        return None


def _plain_add(cfg: DictConfig, ov: Any) -> tuple[DictConfig, str] | None:
    """(parent section, leaf) when `ov` adds or force-adds a plain value (no dict, list or
    sweep) under a section that exists as a mapping: what OmegaConf.update does for it is
    `parent.leaf = value` with the parent's struct flag lifted."""
    if not (ov.is_add() or ov.is_force_add()) or ov.is_sweep_override():
        return None
    *path, leaf = ov.key_or_group.split(".")
    node: Any = cfg
    for part in path:
        node = _child(node, part) if isinstance(node, DictConfig) else None
        if not isinstance(node, DictConfig) or is_missing(node) or is_none(node):
            return None
        if is_interpolation(node):
            return None
    if isinstance(_child(node, leaf), (DictConfig, ListConfig)):
        return None  # a section replaced by a value: left to update itself
    value = ov.value()
    return None if isinstance(value, (dict, list)) else (node, leaf)


def _apply_all(parsed: list[Any], cfg: DictConfig) -> None:
    """Each override in order; a run of `_plain_add`s under one parent under one lift."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.errors import HydraException

    i = 0
    while i < len(parsed):
        ov = parsed[i]
        target = _plain_add(cfg, ov)
        if target is None:
            try:
                ConfigLoaderImpl._apply_overrides_to_config(overrides=[ov], cfg=cfg)
            except (HydraException, OmegaConfBaseException, ValueError) as exc:
                raise _apply_error(ov, exc) from None
            i += 1
            continue
        parent = target[0]
        with flag_override(parent, "struct", False):
            while target is not None and target[0] is parent:
                try:
                    parent.__setattr__(target[1], ov.value())
                except (OmegaConfBaseException, ValueError) as exc:
                    raise _apply_error(ov, exc) from None
                i += 1
                ov = parsed[i] if i < len(parsed) else None
                target = _plain_add(cfg, ov) if ov is not None else None
