"""TOML reading with locations: a parse error becomes a finding with file and line."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from catalog.errors import StepsError
from catalog.syntax_errors import toml_error


def load_toml(path: Path, code: str = "E-TOML") -> dict:
    """Parse a TOML file or raise `StepsError` naming the file and line (exit 2: unreadable
    input or TOML syntax is a setup error; `check` reports it as a finding instead)."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise StepsError(
            code, f"cannot read: {exc.strerror}", path=str(path), exit_code=2
        ) from None
    except UnicodeDecodeError as exc:
        raise StepsError(
            code,
            f"not UTF-8 text (byte {exc.start}: {exc.reason})",
            path=str(path),
            fix="save the file as UTF-8",
            exit_code=2,
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(exc, path, code) from None


def line_of(path: Path, *needles: str) -> int | None:
    """1-based line of the first line containing every needle (for pointing at a key)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for i, text in enumerate(lines, 1):
        if all(n in text for n in needles):
            return i
    return None
