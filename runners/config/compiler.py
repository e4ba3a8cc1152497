"""Compile a step config exactly as NeMo-RL does (pinned in `catalog.upstream`).

Mirrors `nemo_rl/utils/config.py`: `load_config` (`defaults:`, a path or a list of paths relative
to the declaring file, merged in order, child last; nested `_override_` is NOT honoured), then
`parse_hydra_overrides` (hydra-core's grammar in struct mode), then the scripts' resolvers and
`oc.env`. Upstream's quirks are kept on purpose: we validate what NeMo-RL will run.

A worked example, two files beside each other:

    # base.yaml                         # child.yaml
    policy:                             defaults: base.yaml
      lr: 1.0e-5                        policy:
      devices: [0, 1]                     devices: [2]      # a list replaces the parent's
      max_steps: 100                      max_steps: ???    # `???` keeps the parent's 100
    loss:                                 warmup: ${div:${policy.max_steps},10}
      kind: dpo                         loss:
      beta: 0.1                           _override_: true  # the whole section replaced
                                          kind: sft

    >>> c = compile_config("child.yaml", ["policy.lr=3e-6", "+policy.seed=7"])
    >>> c.resolved()
    {'policy': {'lr': 3e-06, 'devices': [2], 'max_steps': 100, 'warmup': 10.0, 'seed': 7},
     'loss': {'kind': 'sft'}}
    >>> [p.name for p in c.sources], c.locate("policy.max_steps"), c.locate("policy.lr")
    (['base.yaml', 'child.yaml'], ('base.yaml', 4), ("override 'policy.lr=3e-6'", None))

`policy.seed=7` without the `+` is E-OVERRIDE-KEY (struct mode: no new keys), as in NeMo-RL.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf, flag_override
from omegaconf.errors import OmegaConfBaseException

from catalog.content_memo import ContentMemo
from catalog.errors import StepsError
from catalog.shell_variables import env_style_missing_key
from catalog.syntax_errors import yaml_error
from catalog.yamlfile import file_key
from runners.config import omegaconf_merge, plain_merge
from runners.config.compile_once import compiled_once
from runners.config.files import load_yaml_data, load_yaml_file
from runners.config.override_apply import apply_overrides
from runners.config.overrides import first_line
from runners.omegaconf_internals import parse_interpolations_once, register_resolver

RESOLVERS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": lambda a, b: max(a, b),
}


# Where each resolver is registered (a range of `catalog.nemo_rl_version.in_range`):
# nemo_rl/utils/config.py:191-198 at v0.6.0/v0.7.0 (mul, div, max), :197-204 at the pin (+add);
# before v0.6.0 each example script registered its own (the GRPO scripts: mul).
RESOLVER_VERSIONS = {"add": "pin", "mul": "all", "div": "0.6.0+", "max": "0.6.0+"}


def register_resolvers() -> None:
    """Register the two-argument resolvers NeMo-RL's example scripts register, and give
    `${oc.env:STEPS_HOME}` its default (steps' own folder; `env_pins.with_steps_home`)."""
    from runners.config.env_pins import with_steps_home

    with_steps_home(os.environ)
    parse_interpolations_once()
    for name, fn in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            register_resolver(name, fn)


@dataclass
class CompiledConfig:
    """A merged config with overrides applied; interpolations are kept until `resolved()`."""

    config: DictConfig
    sources: list[Path] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    _index: tuple | None = field(default=None, init=False, repr=False, compare=False)

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
            env = env_style_missing_key(first_line(exc))
            raise StepsError(
                "E-CONFIG-INTERPOLATION",
                f"{key or 'config'}: cannot resolve: {first_line(exc)}",
                path=path,
                line=line,
                key=key or None,
                fix=f"${{{env}}} names a config key, not the environment: write "
                f"${{oc.env:{env}}} (NeMo-RL's loader resolves it the same way)"
                if env
                else "export the environment variable, give ${oc.env:VAR,default} a default, "
                "or fix the referenced key",
            ) from None

    def _override_of(self, dotted: str) -> str | None:
        """The last override whose key is `dotted` or a parent of it: keys indexed once per
        list of overrides, so locating a finding per key of 50k `++k=v` is not 50k^2 scans."""
        seen = (id(self.overrides), len(self.overrides))
        if self._index is None or self._index[0] != seen:
            last: dict[str, tuple[int, str]] = {}
            for i, token in enumerate(self.overrides):
                key = token.lstrip("+~").split("=", 1)[0].strip()
                if key:
                    last[key] = (i, token)
            self._index = (seen, last)
        last = self._index[1]
        found = [last[k] for k in _self_and_parents(dotted) if k in last]
        return max(found)[1] if found else None

    def locate(self, dotted: str) -> tuple[str | None, int | None]:
        """Where a dotted key was last set, for findings: the command-line override that set it
        (or a parent of it), else the file and line (child files win)."""
        token = self._override_of(dotted)
        if token is not None:
            from runners.secrets import redact_override

            return f"override '{redact_override(token, {})}'", None
        parts = [p for p in dotted.replace("[", ".").replace("]", "").split(".") if p]
        placeholder: tuple[str, int] | None = None
        for src in reversed(self.sources):
            line, node = file_key(src, parts)
            if line is None:
                continue
            if isinstance(node, yaml.ScalarNode) and node.value == "???":
                placeholder = placeholder or (str(src), line)  # `???` never clobbers a parent
                continue
            return str(src), line
        if placeholder is not None:
            return placeholder
        return (str(self.sources[-1]) if self.sources else None), None


def _self_and_parents(dotted: str) -> list[str]:
    """`a.b.c`, `a.b`, `a`: the keys whose override sets `dotted` (a parent `k` as `k.` ends)."""
    return [dotted] + [dotted[:i] for i, c in enumerate(dotted) if c == "."]


def _load_yaml(path: Path, chain: list[Path], plain: bool) -> Any:
    via = " <- ".join(str(p) for p in reversed(chain)) if chain else None
    if path.is_dir():
        raise StepsError(
            "E-CONFIG-DEFAULTS" if chain else "E-CONFIG-NOT-FOUND",
            "is a directory, not a config file" + (f" (inherited via {via})" if via else ""),
            path=str(path),
            fix="name a YAML file (a step's configs are in its config/ folder)",
            exit_code=2,
        )
    if not path.exists():  # a device or FIFO is refused by the read below, with its kind
        raise StepsError(
            "E-CONFIG-DEFAULTS" if chain else "E-CONFIG-NOT-FOUND",
            f"config file not found: {path}" + (f" (inherited via {via})" if via else ""),
            path=str(chain[-1]) if chain else str(path),
            line=_defaults_line(chain[-1]) if chain else None,
            fix="fix the `defaults:` entry: a path relative to the declaring file, or a shipped "
            "config as STEP:CONFIG (e.g. `defaults: rl/nemo_rl/dpo:tiny`)"
            if chain
            else "name a file in the step's config/ folder or an existing YAML path",
            exit_code=2,
        )
    try:
        cfg = load_yaml_data(path) if plain else load_yaml_file(path)
    except OSError as exc:
        raise StepsError(
            "E-CONFIG-READ",
            f"cannot read the config file: {exc.strerror or exc}"
            + (f" (inherited via {via})" if via else ""),
            path=str(path),
            fix="make the file readable by this user"
            if isinstance(exc, PermissionError)
            else "name a regular YAML file of at most 16 MiB",
            exit_code=2,
        ) from None
    except UnicodeDecodeError as exc:  # raised by our decode of the whole file's bytes
        raw, at = exc.object, exc.start
        raise StepsError(
            "E-CONFIG-READ",
            f"the config file is not UTF-8 text (byte 0x{raw[at]:02x})",
            path=str(path),
            line=raw[:at].count(b"\n") + 1,
            fix="save the file as UTF-8",
            exit_code=2,
        ) from None
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path, "E-CONFIG-YAML") from None
    except OmegaConfBaseException as exc:
        raise StepsError(
            "E-CONFIG-YAML", f"invalid config: {first_line(exc)}", path=str(path), exit_code=2
        ) from None
    if not isinstance(cfg, dict if plain else DictConfig):
        raise StepsError(
            "E-CONFIG-YAML",
            "a config file must be a mapping at the top level",
            path=str(path),
            line=1,
            exit_code=2,
        )
    return cfg


def _defaults_line(path: Path) -> int | None:
    return file_key(path, ["defaults"])[0]


def _load_with_inheritance(
    path: Path, chain: list[Path], sources: list[Path], plain: bool, home: Path | None = None
) -> Any:
    """The merged chain of `path`, as plain data or a DictConfig; its files go into `sources`."""
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
    cfg = _load_yaml(path, chain, plain)
    if "defaults" in cfg:
        if plain:
            defaults = cfg["defaults"]
            entries = defaults if isinstance(defaults, list) else [defaults]
            if any(plain_merge.is_unsure(d) for d in entries):
                raise plain_merge.NotPlain  # a DictConfig reads `???` as absent, resolves `${}`
            cfg = {k: v for k, v in cfg.items() if k != "defaults"}
        else:
            defaults = cfg.pop("defaults")
        if isinstance(defaults, str):
            defaults = [defaults]
        elif isinstance(defaults, (ListConfig, list)) and all(isinstance(d, str) for d in defaults):
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
        merge = plain_merge.merge_with_override if plain else omegaconf_merge.merge_with_override
        base = {} if plain else OmegaConf.create({})
        for entry in defaults:
            parent = Path(entry) if entry.startswith("/") else path.parent / entry
            if not parent.exists():
                from runners.config.step_configs import step_config

                parent = step_config(entry, home, path, _defaults_line(path)) or parent
            parent_cfg = _load_with_inheritance(parent, [*chain, path], sources, plain, home)
            base = omegaconf_merge.merged(merge, base, parent_cfg, parent)
        cfg = omegaconf_merge.merged(merge, base, cfg, path)
    sources.append(path)
    return cfg


# Chains plain data could not merge (OmegaConf merged them file by file), per config file: for
# stats and tests (upstream's own recipes all take the plain path, tests/test_config_merge.py).
MERGED_BY_OMEGACONF: Counter[str] = Counter()
# Merged trees and their mappings of SUBTREE_BYTES or more, pickled by their data: a copy is ~8x
# cheaper than building its nodes (~60 us each); recipes of one parent (the upstream corpus)
# build ~45% fewer nodes. A one-shot compile keeps nothing (`seen_twice`).
_TREES = ContentMemo(max_entries=2048, max_bytes=64 << 20, seen_twice=True)
SUBTREE_BYTES = 64


def load_config(path: str | Path, home: Path | None = None) -> CompiledConfig:
    """Load a YAML config with NeMo-RL's `defaults:` inheritance (no overrides); a bare
    `defaults: NAME` not beside the declaring file is the config NAME in `home`, the step's
    config folder (`runners.config.step_configs`)."""
    parse_interpolations_once()
    cfg, sources = _load_chain(Path(path), home)
    return CompiledConfig(cfg, sources)


def _load_chain(path: Path, home: Path | None) -> tuple[DictConfig, list[Path]]:
    """The merged chain and its files: as plain data when `plain_merge` can, else by OmegaConf."""
    sources: list[Path] = []
    try:
        data = _load_with_inheritance(path, [], sources, True, home)
        return _tree(data), sources
    except (plain_merge.NotPlain, OmegaConfBaseException):  # an interpolation that won't parse
        MERGED_BY_OMEGACONF[str(path)] += 1
        sources = []
        return _load_with_inheritance(path, [], sources, False, home), sources


def _tree(data: dict) -> DictConfig:
    """`OmegaConf.create(data)`, node for node, its mappings kept by their data (`_TREES`), so
    a chain read again elsewhere, and recipes sharing a parent's sections, get copies."""
    blob = pickle.dumps(data, pickle.HIGHEST_PROTOCOL)
    return _kept(data, blob)


def _kept(data: dict, blob: bytes) -> DictConfig:
    key = hashlib.blake2b(blob, digest_size=16).digest()
    return _TREES.get(key, lambda: _build(data), size=len(blob))


def _build(data: dict) -> DictConfig:
    """What `OmegaConf.create(data)` builds: an empty mapping given each key in order, as its
    own `create` does; a large mapping value is a standalone tree (`_kept`), set without the
    copy OmegaConf makes of a node it is given (the tree is fresh and has no other user)."""
    config = OmegaConf.create({})
    with flag_override(config, "no_deepcopy_set_nodes", True):
        for key, value in data.items():
            if type(value) is dict:
                blob = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
                if len(blob) >= SUBTREE_BYTES:
                    value = _kept(value, blob)
            config[key] = value
    return config


def compile_config(
    path: str | Path, overrides: Sequence[str] = (), home: Path | None = None
) -> CompiledConfig:
    """`load_config` + `parse_hydra_overrides`: the config NeMo-RL would build from these argv."""

    def build() -> CompiledConfig:
        compiled = load_config(path, home)
        apply_overrides(compiled.config, list(overrides))
        compiled.overrides = list(overrides)
        return compiled

    return compiled_once(("plain", str(path), str(home), tuple(overrides)), path, build)
