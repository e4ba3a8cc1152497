"""Compile a step config exactly as NeMo-RL does (pinned in `catalog.upstream`).

Mirrors `nemo_rl/utils/config.py`: `load_config` (YAML `defaults:` inheritance, a string or a
list, paths relative to the declaring file, merged in order with the child last, lists replaced,
top-level `_override_: true` replaces the parent's section, nested `_override_` is NOT honoured,
`???` in a child keeps the parent's value), then `parse_hydra_overrides` (hydra-core's grammar
applied in struct mode), then resolution with the scripts' resolvers (add, mul, div, max) and
OmegaConf's `oc.env`. Upstream's quirks are kept on purpose: we validate what NeMo-RL will run.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from catalog.errors import StepsError

RESOLVERS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": lambda a, b: max(a, b),
}


def register_resolvers() -> None:
    """Register the two-argument resolvers NeMo-RL's example scripts register."""
    for name, fn in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


@dataclass
class CompiledConfig:
    """A merged config with overrides applied; interpolations are kept until `resolved()`."""

    config: DictConfig
    sources: list[Path] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)

    def to_yaml(self) -> str:
        return OmegaConf.to_yaml(self.config)

    def resolved(self) -> dict:
        """Resolve interpolations as the scripts' `to_container(resolve=True)` does."""
        register_resolvers()
        try:
            return OmegaConf.to_container(self.config, resolve=True)  # type: ignore[return-value]
        except OmegaConfBaseException as exc:
            key = getattr(exc, "full_key", None) or ""
            path, line = self.locate(key) if key else (None, None)
            raise StepsError(
                "E-CONFIG-INTERPOLATION",
                f"{key or 'config'}: cannot resolve: {_first_line(exc)}",
                path=path,
                line=line,
                key=key or None,
                fix="export the environment variable, give ${oc.env:VAR,default} a default, "
                "or fix the referenced key",
            ) from None

    def locate(self, dotted: str) -> tuple[str | None, int | None]:
        """The file and line that last set a dotted key (child files win), for findings."""
        parts = [p for p in dotted.replace("[", ".").replace("]", "").split(".") if p]
        placeholder: tuple[str, int] | None = None
        for src in reversed(self.sources):
            line, node = _yaml_key_node(src, parts)
            if line is None:
                continue
            if isinstance(node, yaml.ScalarNode) and node.value == "???":
                placeholder = placeholder or (str(src), line)  # `???` never clobbers a parent
                continue
            return str(src), line
        if placeholder is not None:
            return placeholder
        return (str(self.sources[-1]) if self.sources else None), None


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _yaml_key_line(path: Path, parts: list[str]) -> int | None:
    return _yaml_key_node(path, parts)[0]


def _yaml_key_node(path: Path, parts: list[str]) -> tuple[int | None, Any]:
    """The line of a dotted key in one YAML file and its value node (None, None if absent)."""
    try:
        node = _composed(str(path), path.stat().st_mtime_ns)
    except OSError:
        return None, None
    line = None
    for part in parts:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if pair is None:
                return None, None
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            line = node.start_mark.line + 1
        else:
            return None, None
    return line, node


@functools.lru_cache(maxsize=64)
def _composed(path: str, mtime_ns: int) -> Any:
    """A file's YAML node tree, parsed once per version (findings locate many keys)."""
    try:
        return yaml.compose(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None


def _load_yaml(path: Path, chain: list[Path]) -> DictConfig:
    via = " <- ".join(str(p) for p in reversed(chain)) if chain else None
    if path.is_dir():
        raise StepsError(
            "E-CONFIG-DEFAULTS" if chain else "E-CONFIG-NOT-FOUND",
            "is a directory, not a config file" + (f" (inherited via {via})" if via else ""),
            path=str(path),
            fix="name a YAML file (a step's configs are in its config/ folder)",
            exit_code=2,
        )
    if not path.is_file():
        raise StepsError(
            "E-CONFIG-DEFAULTS" if chain else "E-CONFIG-NOT-FOUND",
            f"config file not found: {path}" + (f" (inherited via {via})" if via else ""),
            path=str(chain[-1]) if chain else str(path),
            line=_defaults_line(chain[-1]) if chain else None,
            fix="fix the `defaults:` entry (paths are relative to the declaring file)"
            if chain
            else "name a file in the step's config/ folder or an existing YAML path",
            exit_code=2,
        )
    try:
        cfg = OmegaConf.load(path)
    except OSError as exc:
        raise StepsError(
            "E-CONFIG-READ",
            f"cannot read the config file: {exc.strerror or exc}"
            + (f" (inherited via {via})" if via else ""),
            path=str(path),
            fix="make the file readable by this user",
            exit_code=2,
        ) from None
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or _first_line(exc)
        raise StepsError(
            "E-CONFIG-YAML",
            f"invalid YAML: {problem}",
            path=str(path),
            line=mark.line + 1 if mark else None,
            fix="correct the YAML syntax at that line",
            exit_code=2,
        ) from None
    except OmegaConfBaseException as exc:
        raise StepsError(
            "E-CONFIG-YAML", f"invalid config: {_first_line(exc)}", path=str(path), exit_code=2
        ) from None
    if not isinstance(cfg, DictConfig):
        raise StepsError(
            "E-CONFIG-YAML",
            "a config file must be a mapping at the top level",
            path=str(path),
            line=1,
            exit_code=2,
        )
    return cfg


def _not_utf8(path: Path) -> StepsError:
    """Where a config file stops being UTF-8 (PyYAML's error counts from its read buffer)."""
    raw = path.read_bytes()
    try:
        raw.decode("utf-8")
        at = None
    except UnicodeDecodeError as exc:
        at = exc.start
    return StepsError(
        "E-CONFIG-READ",
        "the config file is not UTF-8 text"
        + (f" (byte 0x{raw[at]:02x})" if at is not None else ""),
        path=str(path),
        line=raw[:at].count(b"\n") + 1 if at is not None else None,
        fix="save the file as UTF-8",
        exit_code=2,
    )


def _defaults_line(path: Path) -> int | None:
    return _yaml_key_line(path, ["defaults"])


def _merge_with_override(base: DictConfig, child: DictConfig) -> DictConfig:
    """Upstream `merge_with_override`: only top-level `_override_: true` replaces a section."""
    for key in list(child.keys()):
        node = child._get_node(key)  # no interpolation resolution while merging
        if (
            isinstance(node, DictConfig)
            and not node._is_interpolation()
            and node.get("_override_", False)
        ):
            node.pop("_override_")
            if key in base:
                base.pop(key)
    return OmegaConf.merge(base, child)  # type: ignore[return-value]


def _load_with_inheritance(path: Path, chain: list[Path], sources: list[Path]) -> DictConfig:
    real = path.resolve()
    if real in [p.resolve() for p in chain]:
        cycle = " -> ".join(str(p) for p in [*chain, path])
        raise StepsError(
            "E-CONFIG-CYCLE",
            f"`defaults:` cycle: {cycle}",
            path=str(chain[-1]),
            line=_defaults_line(chain[-1]),
            fix="remove one of the `defaults:` entries that closes the loop",
            exit_code=2,
        )
    cfg = _load_yaml(path, chain)
    if "defaults" in cfg:
        defaults = cfg.pop("defaults")
        if isinstance(defaults, str):
            defaults = [defaults]
        elif isinstance(defaults, ListConfig) and all(isinstance(d, str) for d in defaults):
            defaults = [str(d) for d in defaults]
        else:
            raise StepsError(
                "E-CONFIG-DEFAULTS",
                "`defaults:` must be a path or a list of paths (Hydra config groups, `_self_` "
                "and `override` entries are not supported by NeMo-RL's loader)",
                path=str(path),
                line=_defaults_line(path),
                fix="list parent YAML files relative to this file, e.g. `defaults: base.yaml`",
                exit_code=2,
            )
        base = OmegaConf.create({})
        for entry in defaults:
            parent = Path(entry) if entry.startswith("/") else path.parent / entry
            parent_cfg = _load_with_inheritance(parent, [*chain, path], sources)
            base = _merge_with_override(base, parent_cfg)
        cfg = _merge_with_override(base, cfg)
    sources.append(path)
    return cfg


def load_config(path: str | Path) -> CompiledConfig:
    """Load a YAML config with NeMo-RL's `defaults:` inheritance (no overrides)."""
    sources: list[Path] = []
    cfg = _load_with_inheritance(Path(path), [], sources)
    return CompiledConfig(cfg, sources)


def all_keys(node: Any, prefix: str = "") -> list[str]:
    """Every dotted key in a config (mappings only; list items are values)."""
    out: list[str] = []
    if isinstance(node, (DictConfig, dict)):
        for k in node.keys() if isinstance(node, DictConfig) else node:
            key = f"{prefix}.{k}" if prefix else str(k)
            out.append(key)
            try:
                child = node._get_node(k) if isinstance(node, DictConfig) else node[k]
            except OmegaConfBaseException:
                continue
            if isinstance(child, (DictConfig, dict)):
                out.extend(all_keys(child, key))
    return out


def did_you_mean(key: str, keys: list[str], n: int = 3) -> list[str]:
    """Nearest existing dotted keys: whole-key matches first, then same-parent leaf matches."""
    close = difflib.get_close_matches(key, keys, n=n, cutoff=0.6)
    leaf = key.rsplit(".", 1)[-1]
    for k in keys:
        if len(close) >= n:
            break
        if k.rsplit(".", 1)[-1] == leaf and k not in close:
            close.append(k)
    return close


def has_key(cfg: DictConfig, dotted: str) -> bool:
    node: Any = cfg
    for part in dotted.split("."):
        if isinstance(node, DictConfig) and node._get_node(part) is not None:  # `in` misses ???
            node = node._get_node(part)
        elif isinstance(node, ListConfig) and part.isdigit() and int(part) < len(node):
            node = node._get_node(int(part))
        else:
            return False
    return True


def apply_overrides(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """Apply Hydra-style overrides the way `parse_hydra_overrides` does, with clear errors."""
    if not overrides:
        return cfg
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    parsed = []
    for token in overrides:
        try:
            parsed.extend(parser.parse_overrides(overrides=[token]))
        except HydraException as exc:
            raise StepsError(
                "E-OVERRIDE-SYNTAX",
                f"cannot parse override '{token}': {_first_line(exc)}",
                fix="use key=value, +key=value, ++key=value or ~key; quote values that contain "
                "'=', ',', brackets, braces or '$' (e.g. key='a=b')",
                exit_code=2,
            ) from None
    keys = all_keys(cfg)
    for ov in parsed:
        key = ov.key_or_group
        exists = has_key(cfg, key)
        token = ov.input_line
        if ov.is_add() and exists:
            raise StepsError(
                "E-OVERRIDE-KEY",
                f"override '{token}': key '{key}' already exists",
                key=key,
                fix=f"use {key}=... to change it, or ++{key}=... to add-or-change",
                exit_code=2,
            )
        if (ov.is_delete() or not (ov.is_add() or ov.is_force_add())) and not exists:
            near = did_you_mean(key, keys)
            hint = f"did you mean {' or '.join(near)}? " if near else ""
            verb = "delete" if ov.is_delete() else "set"
            add = "" if ov.is_delete() else f"to add a new key use +{key}=..."
            raise StepsError(
                "E-OVERRIDE-KEY",
                f"override '{token}': cannot {verb} '{key}': no such key in the config",
                key=key,
                fix=(hint + add).strip() or "check the key path",
                exit_code=2,
            )
    OmegaConf.set_struct(cfg, True)
    try:
        for ov in parsed:  # one at a time (same result as upstream's batch) to name the token
            try:
                ConfigLoaderImpl._apply_overrides_to_config(overrides=[ov], cfg=cfg)
            except (HydraException, OmegaConfBaseException, ValueError) as exc:
                fix = (
                    "Hydra cannot delete a key whose value is null; set it instead "
                    f"({ov.key_or_group}=...)"
                    if ov.is_delete()
                    else "a dict value merges into an existing section and cannot add keys to "
                    "it; to replace a section use `~key +key={...}`"
                )
                raise StepsError(
                    "E-OVERRIDE-APPLY",
                    f"cannot apply override '{ov.input_line}': {_first_line(exc)}",
                    key=ov.key_or_group,
                    fix=fix,
                    exit_code=2,
                ) from None
    finally:
        OmegaConf.set_struct(cfg, False)
    return cfg


def compile_config(path: str | Path, overrides: list[str] = ()) -> CompiledConfig:
    """`load_config` + `parse_hydra_overrides`: the config NeMo-RL would build from these argv."""
    compiled = load_config(path)
    apply_overrides(compiled.config, list(overrides))
    compiled.overrides = list(overrides)
    return compiled
