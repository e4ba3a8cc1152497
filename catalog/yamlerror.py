"""One translation of a YAML parse error into a located `StepsError`."""

from __future__ import annotations

from pathlib import Path

from catalog.errors import StepsError


def yaml_error(exc: Exception, path: str | Path, code: str, exit_code: int = 2) -> StepsError:
    """`path:line: CODE invalid YAML: <problem>` from a PyYAML exception (exit 2: YAML syntax
    is a setup error wherever the file is read)."""
    mark = getattr(exc, "problem_mark", None)
    return StepsError(
        code,
        f"invalid YAML: {getattr(exc, 'problem', None) or exc}",
        path=str(path),
        line=mark.line + 1 if mark else None,
        fix="correct the YAML syntax at that line",
        exit_code=exit_code,
    )
