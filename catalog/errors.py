"""The one error type and the one finding type: a code, a location, a message and a fix."""

from __future__ import annotations

from dataclasses import dataclass, fields

ERROR = "error"
WARNING = "warning"

# Exit codes shared by every command (README "Exit codes").
EXIT_OK = 0
EXIT_FINDINGS = 1  # errors found in the checked config or data
EXIT_USAGE = 2  # bad flag, missing or unreadable file, unknown id, YAML/TOML syntax
EXIT_INTERNAL = 70  # a bug in steps (EX_SOFTWARE)
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Finding:
    """One problem found by a check, rendered like a compiler diagnostic (`path:line: CODE
    message`, then `  Fix: what to do`)."""

    code: str
    message: str
    path: str | None = None
    line: int | None = None
    fix: str | None = None
    severity: str = ERROR
    key: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def location(self) -> str:
        if self.path is None:
            return ""
        return f"{self.path}:{self.line}" if self.line is not None else self.path

    def render(self, indent: str = "") -> str:
        """The finding as text; `indent` prefixes both lines (for findings nested in a report)."""
        loc = self.location()
        head = f"{loc}: " if loc else ""
        tag = "" if self.is_error else "warning: "
        text = f"{indent}{head}{tag}{self.code} {self.message}"
        return f"{text}\n{indent}  Fix: {self.fix}" if self.fix else text

    def to_dict(self) -> dict:
        """JSON form: code, message, severity and, when known, path, line, location, fix, key."""
        out = {k: v for k in _FIELDS if (v := getattr(self, k)) is not None}  # asdict: 5x slower
        if self.path is not None:
            out["location"] = self.location()
        return out


_FIELDS = tuple(f.name for f in fields(Finding))  # its fields are scalars: no deep copy needed


class StepsError(Exception):
    """A user-facing failure: the CLI prints `finding.render()` and exits with `exit_code`
    (1: errors in the checked config or data; 2: usage or setup, see EXIT_USAGE)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        fix: str | None = None,
        key: str | None = None,
        exit_code: int = EXIT_FINDINGS,
    ) -> None:
        self.finding = Finding(code, message, path=path, line=line, fix=fix, key=key)
        self.exit_code = exit_code
        super().__init__(self.finding.render())


def has_errors(findings: list[Finding]) -> bool:
    return any(f.is_error for f in findings)


def cannot_start(program: str, cwd: object, exc: OSError) -> StepsError:
    """E-EXEC: a program steps hands over to (exec or a waited child) did not start."""
    return StepsError(
        "E-EXEC",
        f"cannot start {program} in {cwd}: {exc.strerror or exc}",
        fix="check that the program is installed and on PATH",
        exit_code=2,
    )
