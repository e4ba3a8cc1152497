"""`check`: the CI contract gate. Every claim the catalog makes is verified against the files;
each problem is a `Finding`, nothing here raises on bad input.

Owns: `manifests` (a step under check: folder, ids, port types, references), `configs` (configs
and their keys), `type_graph` (types.toml), `codes` (catalog/codes.toml), `capabilities` (what
rules need and kinds and backends have), `generated` (PREFLIGHT.md and the kinds' codes,
rendered from the rules); this one runs them over every root.
May import: `runners.config`, `runners.kinds`, `runners.launch`, `runners.preflight`,
`runners.omegaconf_internals`, `catalog`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from catalog.codes import Registry, registry
from catalog.discovery import BUILTIN_ROOT, StepEntry, catalog_roots, discover_roots
from catalog.errors import WARNING, Finding, StepsError
from catalog.manifest import parse_manifest
from catalog.types import TypeGraph, load_catalog_types
from runners.check import manifests
from runners.check.capabilities import capabilities
from runners.check.codes import manifest_codes, registry_against_source
from runners.check.configs import config_keys, configs
from runners.check.type_graph import type_graph


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
    steps = [manifests.StepUnderCheck(e) for e in entries]
    rules = _preflight_rules(findings)
    codes = _codes(findings)
    for s in steps:
        findings += _check_step(s, graph, rules, codes)
    if include_builtin and codes is not None:
        findings += registry_against_source(codes, BUILTIN_ROOT.parent, rules)
    if include_builtin and rules is not None:
        findings += capabilities()
    findings += type_graph(graph, {s.entry.id: s for s in steps})
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
                    manifests.manifest_line(e, "id"),
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


def _codes(findings: list[Finding]) -> Registry | None:
    """The registry of codes, or None (its finding added) when it does not load."""
    try:
        return registry()
    except StepsError as exc:
        findings.append(exc.finding)
        return None


def _check_step(
    s: manifests.StepUnderCheck, graph: TypeGraph, rules: set[str] | None, codes: Registry | None
) -> list[Finding]:
    e = s.entry
    out = manifests.layout(e)
    if e.load_error is not None:
        return [*out, e.load_error]
    manifest, found = parse_manifest(e.data, e.manifest_path)
    out += found
    if manifest is None:
        return out
    s.manifest = manifest
    out += manifests.identity(e, manifest)
    out += manifests.port_types(e, manifest, graph)
    out += [*configs(s), *(config_keys(s) if s.default else [])]
    out += manifests.error_checks(e, manifest, rules)
    if codes is not None:
        out += manifest_codes(e, manifest, codes)
    out += manifests.local_references(e, manifest)
    return out


def _docs(home: Path, include_builtin: bool) -> list[Finding]:
    """The home root's generated files equal what `docs` writes (built-in root, else first)."""
    from catalog.docs import stale_docs

    fix = "run `python -m steps docs`"
    if not (include_builtin and home == BUILTIN_ROOT):
        return stale_docs(home, f"run `python -m steps docs --catalog {home} --no-builtin`")
    from catalog.docs import source_checkout
    from runners.check.generated import stale_generated

    repo = source_checkout()
    edit = (
        "PREFLIGHT.md is generated: put prose in runners/preflight/PREFLIGHT.in.md, a code's "
        "condition/upstream/fix/when in catalog/codes.toml, a rule's versions in its @rule; "
        "then run `python -m steps docs`"
    )
    return stale_docs(home, fix) + (stale_generated(repo, edit) if repo is not None else [])
