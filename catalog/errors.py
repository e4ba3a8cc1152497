"""The one error type and the one finding type: a code, a location, a message and a fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    """One problem found by a check: rendered as `path:line: CODE message. Fix: ...`."""

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

    def render(self) -> str:
        loc = self.location()
        head = f"{loc}: " if loc else ""
        tag = "" if self.is_error else "warning: "
        fix = f" Fix: {self.fix}" if self.fix else ""
        return f"{head}{tag}{self.code} {self.message}{fix}"

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


class StepsError(Exception):
    """A user-facing failure: the CLI prints `finding.render()` and exits with `exit_code`."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        fix: str | None = None,
        key: str | None = None,
        exit_code: int = 1,
    ) -> None:
        self.finding = Finding(code, message, path=path, line=line, fix=fix, key=key)
        self.exit_code = exit_code
        super().__init__(self.finding.render())


def has_errors(findings: list[Finding]) -> bool:
    return any(f.is_error for f in findings)
