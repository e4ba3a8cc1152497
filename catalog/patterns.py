"""Pattern files (`<root>/patterns/<id>.md`): YAML frontmatter that `check` validates and
PATTERNS.md indexes, then a Markdown body with fixed sections; a malformed file is a finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from catalog import record_file
from catalog.content_memo import ContentMemo
from catalog.errors import WARNING, Finding
from catalog.model_errors import dotted, findings_from
from catalog.syntax_errors import yaml_error
from catalog.yamlfile import compose, key_lines, parse_data

PATTERNS_DIR = "patterns"
CONFIDENCE = ("high", "medium", "experimental")
FIELDS = ("id", "title", "tags", "triggers", "steps", "confidence")
SECTIONS = ("When to apply", "What to do", "Exceptions", "References")
_WANT = {"steps": "a list of strings", "tags": "a list of strings (at least one)"}
_WANT["triggers"] = _WANT["tags"]
Text = Annotated[str, Field(pattern=r"\S")]
Item = Annotated[str, Field(min_length=1)]


class Frontmatter(BaseModel):
    """A pattern file's frontmatter fields."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: Text
    title: Text
    tags: list[Item] = Field(min_length=1)
    triggers: list[Item] = Field(min_length=1)
    steps: list[Item]
    confidence: Text


_FENCE = "---"
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Pattern:
    """One pattern's frontmatter; `lines` maps each dotted key (`steps.0`) to its file line."""

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
    """Parse and validate one pattern file; `step_ids` (when given) must contain its steps.
    The same path, text and step ids again give a copy of the first answer (`check` and
    `docs` read every pattern of a root)."""
    try:
        text = record_file.utf8(record_file.read_capped(path))
    except (OSError, ValueError) as exc:
        return None, [_bad(path, None, f"cannot read: {record_file.reason(exc)}")]
    ids = None if step_ids is None else frozenset(step_ids)
    key = (str(path), text, ids)
    return _PARSED.get(key, lambda: _parse(path, text, step_ids), len(text))


_PARSED = ContentMemo(max_entries=128)


def _parse(path: Path, text: str, step_ids: set[str] | None) -> tuple[Pattern | None, list]:
    import yaml

    front, body_line, findings = _split(text, path)
    if front is None:
        return None, findings
    try:
        data = parse_data(front)
        keys = key_lines(compose(front), first_line=2)  # after the opening '---'
    except ValueError as exc:  # nested too deep
        return None, [_bad(path, 2, f"the frontmatter is {exc}")]
    except yaml.YAMLError as exc:
        err = yaml_error(exc, path, "E-PATTERN-FRONTMATTER", first_line=2, what="YAML frontmatter")
        return None, [err.finding]
    if not isinstance(data, dict):
        return None, [_bad(path, 2, "the frontmatter must be a YAML mapping of fields")]
    lines = {dotted(k): n for k, n in keys.items()}  # `steps.0`: the first step's line

    def at(key: str) -> int:
        return lines.get(key, 1)

    def wrong(code: str, key: str, message: str, fix: str) -> Finding:
        return Finding(code, message, path=str(path), line=at(key), key=key, fix=fix)

    try:
        fields = Frontmatter.model_validate(data)
    except ValidationError as exc:
        found = findings_from(
            exc,
            code="E-PATTERN-FIELD",
            path=path,
            data=data,
            locate=lambda loc: at(str(loc[0])) if loc else 1,
            message=lambda err, loc: _field_problem(err, str(loc[0]) if loc else "", data),
        )
        first: dict[str, Finding] = {}  # one finding per field, unknown fields first
        for f in found:
            first.setdefault((f.key or "").split(".")[0], f)
        order = sorted(first, key=lambda k: (k in FIELDS, FIELDS.index(k) if k in FIELDS else k))
        return None, [replace(first[k], key=k) for k in order]

    pattern = Pattern(
        id=fields.id,
        title=fields.title.strip(),
        tags=tuple(fields.tags),
        triggers=tuple(fields.triggers),
        steps=tuple(fields.steps),
        confidence=fields.confidence,
        path=path,
        lines=lines,
    )
    if pattern.id != path.stem:
        message = f"id '{pattern.id}' differs from the file name '{path.name}'"
        fix = f"set `id: {path.stem}` or rename the file to {pattern.id}.md"
        findings.append(wrong("E-PATTERN-ID", "id", message, fix))
    if pattern.confidence not in CONFIDENCE:
        message = f"confidence '{pattern.confidence}' is not one of {', '.join(CONFIDENCE)}"
        fix = "say how well the pattern is established: high, medium or experimental"
        findings.append(wrong("E-PATTERN-CONFIDENCE", "confidence", message, fix))
    if step_ids is not None:
        findings += _unknown_steps(pattern, step_ids)
    findings += _missing_sections(text, body_line, path)
    return pattern, findings


def _field_problem(err: Any, key: str, data: dict) -> tuple[str, str]:
    """(message, fix) for a frontmatter field that is unknown, missing or of the wrong shape."""
    if err["type"] == "extra_forbidden":
        return f"unknown frontmatter field '{key}'", f"allowed fields: {', '.join(FIELDS)}"
    got = "missing" if key not in data else f"got {data[key]!r}"
    want = _WANT.get(key, "a non-empty string")
    return f"frontmatter field '{key}' must be {want} ({got})", f"set `{key}:` in the frontmatter"


def _unknown_steps(pattern: Pattern, step_ids: set[str]) -> list[Finding]:
    from catalog.did_you_mean import did_you_mean

    otherwise = "list ids from `python -m steps list`"
    return [
        Finding(
            "E-PATTERN-STEP",
            f"step '{sid}' does not exist",
            path=str(pattern.path),
            line=pattern.lines.get(f"steps.{i}") or pattern.lines.get("steps"),
            key="steps",
            fix=did_you_mean(sid, sorted(step_ids), otherwise=otherwise),
        )
        for i, sid in enumerate(pattern.steps)
        if sid not in step_ids
    ]


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
