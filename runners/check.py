"""`check`: the CI contract gate. Every claim the catalog makes is verified against the files.

Manifests against the schema, ids and folders, the type graph, manifest keys against the
compiled default config (NeMo-RL's own `load_config` semantics, via `runners.config`), every
config of every step, READMEs, local references, preflight rule names, pattern frontmatter,
and the generated docs. Each problem is a `Finding`; nothing here raises on bad input.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.discovery import BUILTIN_ROOT, StepEntry, catalog_roots, discover_roots
from catalog.errors import WARNING, Finding, StepsError
from catalog.manifest import StepManifest, parse_manifest
from catalog.tomlfile import line_of
from catalog.types import TypeGraph, load_catalog_types

REQUIRED_FILES = ("README.md", "step.py", "config/default.yaml", "config/tiny.yaml")


@dataclass
class CheckReport:
    findings: list[Finding]
    roots: list[Path]
    steps: int = 0
    patterns: int = 0

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.is_error]

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> dict:
        return {
            "errors": len(self.errors),
            "warnings": len(self.findings) - len(self.errors),
            "steps": self.steps,
            "patterns": self.patterns,
            "roots": [str(r) for r in self.roots],
        }


@dataclass
class _Step:
    """One step under check: its entry, validated manifest and compiled default config."""

    entry: StepEntry
    manifest: StepManifest | None = None
    default: Any = None  # runners.config.CompiledConfig
    keys: list[str] = field(default_factory=list)


def _near(word: str, pool: list[str]) -> str:
    close = difflib.get_close_matches(word, pool, n=1)
    return f"did you mean {close[0]}? " if close else ""


def _at(entry: StepEntry, *needles: str) -> int | None:
    return line_of(entry.manifest_path, *needles)


def check_catalog(extra_roots=(), include_builtin: bool = True) -> CheckReport:
    """Check every root (built-in unless excluded, `--catalog` dirs, `$STEPS_PATH`)."""
    roots = catalog_roots(extra_roots, include_builtin)
    try:
        entries = discover_roots(roots, strict=False)
    except StepsError as exc:
        return CheckReport([exc.finding], roots)
    graph = load_catalog_types(extra_roots, include_builtin)
    findings: list[Finding] = list(graph.findings)
    ids = [e.id for e in entries]
    findings += _duplicate_ids(entries)
    steps = [_Step(e) for e in entries]
    rules = _preflight_rules(findings)
    for s in steps:
        findings += _check_step(s, graph, rules)
    findings += _type_graph(graph, {s.entry.id: s for s in steps})
    from catalog.patterns import load_patterns

    patterns, found = load_patterns(roots, set(ids))
    findings += found
    if roots:
        findings += _docs(roots[0], include_builtin)
    findings = sorted(set(findings), key=lambda f: (f.path or "", f.line or 0, f.code, f.message))
    return CheckReport(findings, roots, steps=len(entries), patterns=len(patterns))


def _duplicate_ids(entries: list[StepEntry]) -> list[Finding]:
    seen: dict[str, StepEntry] = {}
    out = []
    for e in entries:
        if e.load_error is not None:
            continue
        first = seen.setdefault(e.id, e)
        if first is not e:
            out.append(
                Finding(
                    "E-STEP-DUPLICATE",
                    f"step id '{e.id}' is also defined by {first.manifest_path}",
                    str(e.manifest_path),
                    _at(e, "id"),
                    fix="step ids must be unique across catalog roots: rename one folder",
                )
            )
    return out


def _preflight_rules(findings: list[Finding]) -> set[str] | None:
    """Registered preflight rule ids, or None when the registry is empty or cannot load."""
    try:
        from runners.preflight import load_rules

        rules = set(load_rules())
    except Exception as exc:  # a half-landed rule module must not crash the gate
        findings.append(
            Finding(
                "W-PREFLIGHT-RULES",
                f"preflight rules could not be loaded: {type(exc).__name__}: {exc}",
                severity=WARNING,
                fix="fix the module named in runners.preflight.RULE_MODULES",
            )
        )
        return None
    return rules or None


def _check_step(s: _Step, graph: TypeGraph, rules: set[str] | None) -> list[Finding]:
    e = s.entry
    out = _layout(e)
    if e.load_error is not None:
        return [*out, e.load_error]
    manifest, found = parse_manifest(e.data, e.manifest_path)
    out += found
    if manifest is None:
        return out
    s.manifest = manifest
    out += _identity(e, manifest)
    out += _port_types(e, manifest, graph)
    out += _configs(s)
    if s.default is not None:
        out += _config_keys(s)
    out += _error_checks(e, manifest, rules)
    out += _local_references(e, manifest)
    return out


def _layout(e: StepEntry) -> list[Finding]:
    """The files every step folder has, and a README that names the step."""
    out = []
    for rel in REQUIRED_FILES:
        if not (e.dir / rel).is_file():
            out.append(
                Finding(
                    "E-STEP-FILES",
                    f"step folder lacks {rel}",
                    str(e.dir / rel),
                    fix="every step has README.md, step.py, config/default.yaml and "
                    "config/tiny.yaml",
                )
            )
    readme = e.dir / "README.md"
    if readme.is_file() and e.id not in readme.read_text(encoding="utf-8", errors="replace"):
        out.append(
            Finding(
                "E-README-ID",
                f"README does not name the step id '{e.id}'",
                str(readme),
                1,
                fix=f"mention `{e.id}` (e.g. in the smoke command `python -m steps run {e.id}`)",
            )
        )
    return out


def _identity(e: StepEntry, m: StepManifest) -> list[Finding]:
    out = []
    if m.step.id != e.folder_id:
        out.append(
            Finding(
                "E-STEP-ID",
                f"id '{m.step.id}' differs from the folder '{e.folder_id}'",
                str(e.manifest_path),
                _at(e, "id", m.step.id),
                key="step.id",
                fix=f'set id = "{e.folder_id}" or move the folder',
            )
        )
    first = e.folder_id.split("/", 1)[0]
    if m.step.category != first:
        out.append(
            Finding(
                "E-STEP-CATEGORY",
                f"category '{m.step.category}' differs from the first folder '{first}'",
                str(e.manifest_path),
                _at(e, "category"),
                key="step.category",
                fix=f'set category = "{first}"',
            )
        )
    return out


def _port_types(e: StepEntry, m: StepManifest, graph: TypeGraph) -> list[Finding]:
    out = []
    for kind, ports in (("consumes", m.consumes), ("produces", m.produces)):
        for p in ports:
            if p.type not in graph:
                out.append(
                    Finding(
                        "E-TYPE-UNKNOWN",
                        f"{kind} '{p.name}': unknown artifact type '{p.type}'",
                        str(e.manifest_path),
                        _at(e, "type", f'"{p.type}"'),
                        key=f"{kind}.{p.name}.type",
                        fix=_near(p.type, sorted(graph.types))
                        + f"types are declared in {graph.path.name}",
                    )
                )
    return out


def _configs(s: _Step) -> list[Finding]:
    """Every config of the step loads with NeMo-RL's semantics and its interpolations resolve."""
    from runners.config import all_keys, load_config

    e, m = s.entry, s.manifest
    out = []
    names = e.config_names()
    if m.run.default_config not in names:
        out.append(
            Finding(
                "E-CONFIG-NOT-FOUND",
                f"run.default_config '{m.run.default_config}' is not in config/",
                str(e.manifest_path),
                _at(e, "default_config"),
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
    """Resolve each interpolation on its own so one failure does not hide the next.

    An unset `${oc.env:VAR}` or a reference to a `???` value is a warning: it is supplied at
    run time. Anything else (a missing key, an unknown resolver) is an error.
    """
    from omegaconf import DictConfig, ListConfig
    from omegaconf.errors import InterpolationToMissingValueError

    from runners.config import register_resolvers

    register_resolvers()
    out = []

    def walk(node, prefix: str) -> None:
        items = list(node.keys()) if isinstance(node, DictConfig) else range(len(node))
        for k in items:
            key = f"{prefix}.{k}" if prefix else str(k)
            child = node._get_node(k)
            if child._is_interpolation():
                try:
                    node[k]
                except Exception as exc:
                    out.append(_interpolation_finding(compiled, key, child, exc))
            elif isinstance(child, (DictConfig, ListConfig)):
                walk(child, key)

    def _interpolation_finding(compiled, key, child, exc) -> Finding:
        path, line = compiled.locate(key)
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raw = str(child._value())
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
    from runners.config import did_you_mean

    near = did_you_mean(key, keys)
    hint = f"did you mean {' or '.join(near)}? " if near else ""
    return Finding(
        code,
        f"{what} '{key}' is not a key of the default config",
        str(e.manifest_path),
        at,
        key=key,
        fix=hint + "name a key that exists in config/default.yaml (after `defaults:`)",
    )


def _config_keys(s: _Step) -> list[Finding]:
    """Ports, type keys and parameters name keys of the compiled default config."""
    from runners.config import has_key

    e, m, cfg = s.entry, s.manifest, s.default.config
    out = []
    for p in [*m.consumes, *m.produces]:
        for key in p.config_keys:
            if not has_key(cfg, key):
                at = _at(e, "config_keys", f'"{key}"') or _at(e, f'"{key}"')
                out.append(
                    _missing_key(e, f"port '{p.name}' config key", key, s.keys, "E-PORT-KEY", at)
                )
        if p.type_key and not has_key(cfg, p.type_key):
            at = _at(e, "type_key", f'"{p.type_key}"')
            out.append(
                _missing_key(e, f"port '{p.name}' type_key", p.type_key, s.keys, "E-TYPE-KEY", at)
            )
    for par in m.parameters:
        at = _at(e, "name", f'"{par.name}"')
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


def _error_checks(e: StepEntry, m: StepManifest, rules: set[str] | None) -> list[Finding]:
    """`[[errors]] check` names a registered preflight rule (a warning while rules land)."""
    if rules is None:
        return []
    out = []
    for err in m.errors:
        if err.check and err.check not in rules:
            out.append(
                Finding(
                    "W-ERRORS-CHECK",
                    f"error {err.name}: check '{err.check}' is not a registered preflight rule",
                    str(e.manifest_path),
                    _at(e, "check", f'"{err.check}"'),
                    severity=WARNING,
                    key=f"errors.{err.name}.check",
                    fix=_near(err.check, sorted(rules))
                    + "name a rule from runners.preflight.load_rules()",
                )
            )
    return out


def _local_references(e: StepEntry, m: StepManifest) -> list[Finding]:
    out = []
    for rel in m.reference.local:
        if not (e.dir / rel).exists():
            out.append(
                Finding(
                    "E-REFERENCE-LOCAL",
                    f"local reference '{rel}' does not exist",
                    str(e.manifest_path),
                    _at(e, f'"{rel}"'),
                    key="reference.local",
                    fix="paths are relative to the step folder: fix or remove the entry",
                )
            )
    return out


def _type_graph(graph: TypeGraph, steps: dict[str, _Step]) -> list[Finding]:
    """is_a parents exist, no is_a cycles, every convert_to has a converter step that fits."""
    out = []
    path = str(graph.path)
    names = sorted(graph.types)
    for name, t in sorted(graph.types.items()):
        at = line_of(graph.path, f"[{name}]")
        for parent in t.is_a:
            if parent not in graph:
                out.append(
                    Finding(
                        "E-TYPES-PARENT",
                        f"type '{name}' is_a unknown type '{parent}'",
                        path,
                        at,
                        fix=_near(parent, names) + "declare the parent type or fix the name",
                    )
                )
        for c in t.convert_to:
            out += _conversion(graph, name, c, steps, at)
    for cyc in graph.cycles():
        out.append(
            Finding(
                "E-TYPES-CYCLE",
                f"is_a cycle: {' -> '.join([*cyc, cyc[0]])}",
                path,
                line_of(graph.path, f"[{cyc[0]}]"),
                fix="is_a must form a hierarchy: remove one edge of the cycle",
            )
        )
    return out


def _conversion(graph: TypeGraph, name: str, c, steps: dict[str, _Step], at) -> list[Finding]:
    path = str(graph.path)
    if c.target not in graph:
        return [
            Finding(
                "E-CONVERT-VIA",
                f"type '{name}' converts to unknown type '{c.target}'",
                path,
                at,
                fix=_near(c.target, sorted(graph.types)) + "declare the target type",
            )
        ]
    step = steps.get(c.via)
    if step is None:
        return [
            Finding(
                "E-CONVERT-VIA",
                f"type '{name}' converts to '{c.target}' via '{c.via}', which is not a step",
                path,
                at,
                fix=_near(c.via, sorted(steps)) + "name an existing converter step id",
            )
        ]
    ins = [str(p.get("type")) for p in step.entry.consumes]
    outs = [str(p.get("type")) for p in step.entry.produces]
    problems = []
    if not any(graph.is_a(name, t) for t in ins):
        problems.append(f"consumes none of the types '{name}' is_a (it consumes {ins or 'none'})")
    if not any(graph.is_a(t, c.target) for t in outs):
        problems.append(f"produces nothing that is_a '{c.target}' (it produces {outs or 'none'})")
    return [
        Finding(
            "E-CONVERT-VIA",
            f"converter '{c.via}' for {name} -> {c.target} {problem}",
            path,
            at,
            fix=f"make {c.via} consume {name} (or a parent) and produce {c.target} (or a subtype)",
        )
        for problem in problems
    ]


def _docs(home: Path, include_builtin: bool) -> list[Finding]:
    """The home root's generated files equal what `docs` writes (built-in root, else first)."""
    from catalog.docs import stale_docs

    fix = "run `python -m steps docs`"
    if not (include_builtin and home == BUILTIN_ROOT):
        fix = f"run `python -m steps docs --catalog {home} --no-builtin`"
    return stale_docs(home, fix)
