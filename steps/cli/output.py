"""How commands print: exactly one JSON document with `--json`, text at the terminal width else.

`emit_json(document(findings, steps=[...]))` prints `{"ok", "findings", "steps"}`, once, last.
A `StepsError` or usage error needs no code in the command: `steps.cli.main` prints it as the
one document (`error_document`), so build the whole document first and never print before
raising.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not `from typing import ...`: importing typing costs `list` 3 ms
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

_emitted = 0


def document(findings: Iterable[Any] = (), ok: bool | None = None, **payload: Any) -> dict:
    """`{"ok", "findings", **payload}`; ok is False when any finding is an error."""
    items = [f if isinstance(f, dict) else f.to_dict() for f in findings]
    if ok is None:
        ok = not any(f.get("severity", "error") == "error" for f in items)
    return {"ok": ok, "findings": items, **payload}


def error_document(finding: Any, exit_code: int, command: str | None = None) -> dict:
    """The document `main` prints when a command given --json fails before it emitted one."""
    return document([finding], ok=False, command=command, exit_code=exit_code)


def emit_json(doc: Any, secrets: dict[str, str] | None = None) -> None:
    """Print one JSON document on stdout (other objects as strings), `secrets` as `***`."""
    import json

    global _emitted
    text = json.dumps(doc, indent=2, default=str)
    if secrets:
        from runners.secrets import redact_text

        text = redact_text(text, secrets)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    _emitted += 1


def emitted() -> int:
    """How many documents this process has printed (main compares before and after a command)."""
    return _emitted


def terminal_width(stream: Any = None) -> int:
    """$COLUMNS when set, else the width of the terminal `stream` is on, else 80."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    stream = stream or sys.stdout
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        pass
    return 80


def wrap(text: str, indent: str = "", first: str | None = None, width: int | None = None) -> str:
    """`text` filled to the terminal width, `first` before line one; words are never split."""
    import textwrap

    return textwrap.fill(
        " ".join(line.strip() for line in str(text).splitlines()),
        width=max(width or terminal_width(), 40),
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
