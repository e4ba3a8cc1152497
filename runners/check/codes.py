"""The registry of codes (catalog/codes.toml) against the source and the manifests.

Every code is a string literal in runners/, catalog/ or steps/ (none is built at run time), so a
scan of the literals finds them all.
"""

from __future__ import annotations

import re
from pathlib import Path

from catalog.codes import Registry
from catalog.did_you_mean import with_suggestion
from catalog.discovery import StepEntry
from catalog.errors import WARNING, Finding
from catalog.manifest import StepManifest
from runners.check.manifests import manifest_line

SOURCE_DIRS = ("runners", "catalog", "steps")
# A whole quoted string that is a code (never a prefix such as E-PIPELINE-* in prose).
LITERAL = re.compile(r"""["']([EW]-[A-Z0-9]+(?:-[A-Z0-9]+)*)["']""")
REGISTER_FIX = (
    "add a [{code}] table with area, meaning and fix to catalog/codes.toml, then run "
    "`python -m steps docs`"
)


def source_codes(repo: Path) -> dict[str, tuple[Path, int]]:
    """Each code literal in the Python source, with its first file and line."""
    found: dict[str, tuple[Path, int]] = {}
    for top in SOURCE_DIRS:
        for path in sorted((repo / top).rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for m in LITERAL.finditer(text):
                found.setdefault(m.group(1), (path, text.count("\n", 0, m.start()) + 1))
    return found


def registry_against_source(reg: Registry, repo: Path, rules: set[str] | None) -> list[Finding]:
    """Unregistered codes in the source, registered codes nothing raises, registry checks that
    name no preflight rule, and rules no code names (PREFLIGHT.md's rows come from the codes)."""
    used = source_codes(repo)
    out = [
        Finding(
            "E-CODE-UNREGISTERED",
            f"{code} is raised here but is not in the registry of codes",
            str(path),
            line,
            fix=REGISTER_FIX.format(code=code),
        )
        for code, (path, line) in sorted(used.items())
        if code not in reg
    ]
    for code, entry in sorted(reg.entries.items()):
        if code not in used and entry.documentation_only is None:
            out.append(
                Finding(
                    "E-CODE-UNUSED",
                    f"{code} is registered but nothing in {', '.join(SOURCE_DIRS)} raises it",
                    str(reg.path),
                    reg.line(code),
                    fix='remove the entry, or say why it stays: documentation_only = "..."',
                )
            )
        if rules is not None and entry.check and entry.check not in rules:
            out.append(
                Finding(
                    "W-ERRORS-CHECK",
                    f"{code}: check '{entry.check}' is not a registered preflight rule",
                    str(reg.path),
                    reg.line(code),
                    severity=WARNING,
                    key=f"{code}.check",
                    fix=with_suggestion(
                        entry.check, sorted(rules), "name a rule from runners.preflight"
                    ),
                )
            )
    named = {e.check for e in reg.entries.values()}
    for rule_id in sorted((rules or set()) - named):
        out.append(
            Finding(
                "E-RULE-CODES",
                f"preflight rule `{rule_id}` is named by no code's `check`: PREFLIGHT.md and "
                "`explain` cannot say what it raises",
                str(reg.path),
                fix=f'set check = "{rule_id}" on the codes it raises, then run '
                "`python -m steps docs`",
            )
        )
    return out


def manifest_codes(e: StepEntry, m: StepManifest, reg: Registry) -> list[Finding]:
    """A manifest's [errors] name only registered codes, and a bare `CODE = {}` only for a code
    its kind does not already get."""
    from runners.check.generated import kind_codes

    out = [
        Finding(
            "E-ERRORS-CODE",
            f"error {spec.name} is not in the registry of codes",
            str(e.manifest_path),
            manifest_line(e, spec.name),
            key=f"errors.{spec.name}",
            fix=with_suggestion(
                spec.name, sorted(reg.entries), "name a code from catalog/codes.toml"
            ),
        )
        for spec in m.error_specs
        if spec.name not in reg
    ]
    derived = kind_codes(m.run.runner)
    for spec in m.error_specs:
        if spec.name in derived and not spec.model_dump(exclude={"name"}, exclude_defaults=True):
            out.append(
                Finding(
                    "W-ERRORS-DERIVED",
                    f"{spec.name} = {{}} says nothing the step does not already get: "
                    + (
                        f"its kind's rule `{derived[spec.name]}` raises it"
                        if derived[spec.name]
                        else "catalog/codes.toml gives it to every kind with what it `needs`"
                    ),
                    str(e.manifest_path),
                    manifest_line(e, spec.name),
                    severity=WARNING,
                    key=f"errors.{spec.name}",
                    fix="remove the line (`show` and `explain` list the code for the step)",
                )
            )
    return out
