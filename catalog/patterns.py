"""Pattern files (`<root>/patterns/<id>.md`): YAML frontmatter that `check` validates and
PATTERNS.md indexes, then a Markdown body with fixed sections.

A malformed file is a finding with its file and line, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from catalog.errors import WARNING, Finding
from catalog.syntax_errors import yaml_error
from catalog.yamlfile import compose, top_level_lines

PATTERNS_DIR = "patterns"
CONFIDENCE = ("high", "medium", "experimental")
FIELDS = ("id", "title", "tags", "triggers", "steps", "confidence")
SECTIONS = ("When to apply", "What to do", "Exceptions", "References")
_LIST_FIELDS = ("tags", "triggers", "steps")
_FENCE = "---"
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Pattern:
    """One pattern's frontmatter; `lines` maps each field to its line in the file."""

    id: str
    title: str
    tags: tuple[str, ...]
    triggers: tuple[str, ...]
    steps: tuple[str, ...]
    confidence: str
    path: Path
    lines: dict[str, int] = field(default_factory=dict, compare=False)


def pattern_files(root: Path) -> list[Path]:
    """The pattern files of a catalog root, sorted (an index README.md is not a pattern)."""
    folder = root / PATTERNS_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.md") if p.name != "README.md")


def _split(text: str, path: Path) -> tuple[str | None, int, list[Finding]]:
    """The frontmatter text and the line where the body starts, or a finding."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != _FENCE:
        return None, 0, [_bad(path, 1, "the file must start with a '---' line (YAML frontmatter)")]
    for i, line in enumerate(lines[1:], 2):
        if line.strip() == _FENCE:
            return "\n".join(lines[1 : i - 1]) + "\n", i, []
    return None, 0, [_bad(path, 1, "the frontmatter opened at line 1 is never closed by '---'")]


def _bad(path: Path, line: int | None, message: str, fix: str | None = None) -> Finding:
    return Finding(
        "E-PATTERN-FRONTMATTER",
        message,
        path=str(path),
        line=line,
        fix=fix or f"start the file with '---', the fields {', '.join(FIELDS)}, then '---'",
    )


def parse_pattern(path: Path, step_ids: set[str] | None = None) -> tuple[Pattern | None, list]:
    """Parse and validate one pattern file; `step_ids` (when given) must contain its steps."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [_bad(path, None, f"cannot read: {exc}")]
    front, body_line, findings = _split(text, path)
    if front is None:
        return None, findings
    try:
        data = yaml.load(front, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        lines = top_level_lines(compose(front), first_line=2)  # after the opening '---'
    except yaml.YAMLError as exc:
        err = yaml_error(exc, path, "E-PATTERN-FRONTMATTER", first_line=2, what="YAML frontmatter")
        return None, [err.finding]
    if not isinstance(data, dict):
        return None, [_bad(path, 2, "the frontmatter must be a YAML mapping of fields")]

    def at(key: str) -> int:
        return lines.get(key, 1)

    for key in sorted(set(map(str, data)) - set(FIELDS)):
        findings.append(
            Finding(
                "E-PATTERN-FIELD",
                f"unknown frontmatter field '{key}'",
                path=str(path),
                line=at(key),
                key=key,
                fix=f"allowed fields: {', '.join(FIELDS)}",
            )
        )
    for key in FIELDS:
        value = data.get(key)
        if key in _LIST_FIELDS:
            ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
            ok = ok and (key == "steps" or bool(value))
            want = "a list of strings" + ("" if key == "steps" else " (at least one)")
        else:
            ok, want = isinstance(value, str) and bool(value.strip()), "a non-empty string"
        if not ok:
            got = "missing" if key not in data else f"got {value!r}"
            findings.append(
                Finding(
                    "E-PATTERN-FIELD",
                    f"frontmatter field '{key}' must be {want} ({got})",
                    path=str(path),
                    line=at(key) if key in data else 1,
                    key=key,
                    fix=f"set `{key}:` in the frontmatter",
                )
            )
    if findings:
        return None, findings

    pattern = Pattern(
        id=data["id"],
        title=data["title"].strip(),
        tags=tuple(data["tags"]),
        triggers=tuple(data["triggers"]),
        steps=tuple(data["steps"]),
        confidence=data["confidence"],
        path=path,
        lines=lines,
    )
    if pattern.id != path.stem:
        findings.append(
            Finding(
                "E-PATTERN-ID",
                f"id '{pattern.id}' differs from the file name '{path.name}'",
                path=str(path),
                line=at("id"),
                key="id",
                fix=f"set `id: {path.stem}` or rename the file to {pattern.id}.md",
            )
        )
    if pattern.confidence not in CONFIDENCE:
        findings.append(
            Finding(
                "E-PATTERN-CONFIDENCE",
                f"confidence '{pattern.confidence}' is not one of {', '.join(CONFIDENCE)}",
                path=str(path),
                line=at("confidence"),
                key="confidence",
                fix="say how well the pattern is established: high, medium or experimental",
            )
        )
    if step_ids is not None:
        findings += _unknown_steps(pattern, step_ids)
    findings += _missing_sections(text, body_line, path)
    return pattern, findings


def _unknown_steps(pattern: Pattern, step_ids: set[str]) -> list[Finding]:
    from catalog.did_you_mean import did_you_mean

    out = []
    for sid in pattern.steps:
        if sid in step_ids:
            continue
        out.append(
            Finding(
                "E-PATTERN-STEP",
                f"step '{sid}' does not exist",
                path=str(pattern.path),
                line=_line_in(pattern.path, sid) or pattern.lines.get("steps"),
                key="steps",
                fix=did_you_mean(
                    sid, sorted(step_ids), otherwise="list ids from `python -m steps list`"
                ),
            )
        )
    return out


def _line_in(path: Path, needle: str) -> int | None:
    from catalog.tomlfile import line_of

    return line_of(path, needle)


def _missing_sections(text: str, body_line: int, path: Path) -> list[Finding]:
    """Warn about a missing body section: readers expect the same four in every pattern."""
    body = text.splitlines()[body_line:]
    headings = {m.group(1).strip().lower() for ln in body if (m := _HEADING.match(ln))}
    missing = [s for s in SECTIONS if s.lower() not in headings]
    if not missing:
        return []
    return [
        Finding(
            "W-PATTERN-SECTION",
            f"body lacks section(s): {', '.join(missing)}",
            path=str(path),
            line=body_line + 1,
            severity=WARNING,
            fix=f"add the headings {', '.join('## ' + s for s in SECTIONS)}",
        )
    ]


def load_patterns(
    roots: list[Path], step_ids: set[str] | None = None
) -> tuple[list[Pattern], list[Finding]]:
    """Every valid pattern under the roots (sorted by id) and every finding about them."""
    patterns: list[Pattern] = []
    findings: list[Finding] = []
    for root in roots:
        for path in pattern_files(root):
            pattern, found = parse_pattern(path, step_ids)
            findings += found
            if pattern is not None:
                patterns.append(pattern)
    patterns.sort(key=lambda p: p.id)
    return patterns, findings
