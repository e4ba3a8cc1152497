"""A YAML or TOML syntax error as a setup `StepsError` (exit 2) at the file and line."""

from __future__ import annotations

import re
from pathlib import Path

from catalog.errors import StepsError
from catalog.record_file import reason

_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


def yaml_error(
    exc: Exception, path: str | Path, code: str, *, first_line: int = 1, what: str = "YAML"
) -> StepsError:
    """`path:line: CODE invalid YAML: <problem>` from a PyYAML exception; `first_line` is the
    file line the parsed text starts on (2 for a frontmatter after its `---`)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or reason(exc)
    return StepsError(
        code,
        f"invalid {what}: {problem}",
        path=str(path),
        line=mark.line + first_line if mark is not None else None,
        fix="correct the YAML syntax at that line",
        exit_code=2,
    )


def toml_error(exc: Exception, path: str | Path, code: str) -> StepsError:
    """`path:line: CODE invalid TOML: <problem>` from a tomllib exception."""
    m = _TOML_AT.search(str(exc))
    return StepsError(
        code,
        f"invalid TOML: {_TOML_AT.sub('', str(exc)).strip()}",
        path=str(path),
        line=int(m.group(1)) if m else None,
        fix="correct the TOML syntax at that line",
        exit_code=2,
    )
