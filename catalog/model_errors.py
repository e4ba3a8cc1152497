"""pydantic errors as findings, and where a key sits in a TOML or YAML file: the one reading
of a `ValidationError` (which error first, the key path without union branch names, its line);
each site passes its code, wording and fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from catalog.content_memo import ContentMemo
from catalog.errors import EXIT_FINDINGS, Finding, StepsError

Lines = dict[tuple, int]
ErrorDetails = Mapping[str, Any]  # one item of `ValidationError.errors()`
Locate = Callable[[tuple], int | None]
# The message for one error at its key path, or (message, fix) when the fix depends on it.
Word = Callable[[ErrorDetails, tuple], str | tuple[str, str | None]]
Fix = str | None | Callable[[ErrorDetails, tuple], str | None]
_LINES = ContentMemo()  # (toml?, first line, text) -> key lines


def first_error(exc: ValidationError) -> ErrorDetails:
    """The error to show when only one is: an unknown key (the likeliest typo) before the
    rest, else pydantic's first."""
    errors = exc.errors()
    return next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])


def key_path(loc: Iterable[Any], data: Any = None, missing: bool = False) -> tuple:
    """`loc` without the names pydantic inserts for union branches (`str`, `Target`): a part is a
    key only where `data` has it, or is the last part of a `missing` error."""
    loc = tuple(loc)
    if data is None:
        return loc
    out: list = []
    node = data
    for i, part in enumerate(loc):
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if in_list or (isinstance(node, Mapping) and part in node):
            node = node[part]
        elif missing and isinstance(node, Mapping) and i == len(loc) - 1:
            node = None
        else:
            continue  # a branch name
        out.append(part)
    return tuple(out)


def dotted(loc: Iterable[Any]) -> str:
    """`datasets.0.path`: a key path as findings name it."""
    return ".".join(str(p) for p in loc)


def findings_from(
    exc: ValidationError,
    *,
    code: str,
    path: str | Path | None = None,
    data: Any = None,
    locate: Locate | None = None,
    message: Word | None = None,
    fix: Fix = None,
    first: bool = False,
) -> list[Finding]:
    """One finding per error (only `first_error` when `first`): keyed by the dotted key path,
    at the line `locate` gives for it, worded by `message` (default `key: pydantic's msg`)."""
    errors = [first_error(exc)] if first else exc.errors()
    out = []
    for err in errors:
        loc = key_path(err["loc"], data, err["type"] == "missing")
        key = dotted(loc)
        text = message(err, loc) if message else f"{key or 'value'}: {err['msg']}"
        why = fix(err, loc) if callable(fix) else fix
        if isinstance(text, tuple):
            text, why = text
        out.append(
            Finding(
                code,
                text,
                path=None if path is None else str(path),
                line=locate(loc) if locate else None,
                fix=why,
                key=key or None,
            )
        )
    return out


def error_from(exc: ValidationError, *, exit_code: int = EXIT_FINDINGS, **how: Any) -> StepsError:
    """The first error (`first_error`) as the `StepsError` to raise; `how` as `findings_from`."""
    f = findings_from(exc, first=True, **how)[0]
    return StepsError(
        f.code, f.message, path=f.path, line=f.line, fix=f.fix, key=f.key, exit_code=exit_code
    )


def file_lines(path: str | Path, first_line: int = 1) -> Lines:
    """Every key path of a TOML (`.toml`) or YAML file and its line; empty when the file
    cannot be read or parsed (a location is a help, never a second error)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return text_lines(text, path.suffix == ".toml", first_line)


def text_lines(text: str, toml: bool, first_line: int = 1) -> Lines:
    """`file_lines` of a text already read; a text seen before gives a copy of its lines."""
    return _LINES.get(
        (toml, first_line, text), lambda: _key_lines(text, toml, first_line), len(text)
    )


def _key_lines(text: str, toml: bool, first_line: int) -> Lines:
    if toml:
        from catalog.tomlfile import key_lines

        return key_lines(text)
    import yaml

    from catalog import yamlfile

    try:
        return yamlfile.key_lines(yamlfile.compose(text), first_line)
    except yaml.YAMLError:
        return {}


def line_of(source: Mapping[tuple, int] | str | Path, *keys: Any) -> int | None:
    """The line of the deepest of `keys` (a key path) that `source` has: key lines already read,
    or the path of a TOML or YAML file."""
    lines = source if isinstance(source, Mapping) else file_lines(source)
    while keys:
        if keys in lines:
            return lines[keys]
        keys = keys[:-1]
    return None
