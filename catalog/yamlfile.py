"""YAML files and where their keys sit: one reader for the YAML formats we own (data, the
line of every key, clean errors) and one walk of PyYAML's node tree for every finding that
points at `file:line` (configs, pipeline files, blends, pattern frontmatter).

Key paths are tuples of mapping keys (strings) and list indexes (ints); lines are 1-based file
lines. A file that cannot be read, is not UTF-8 or is not YAML is exit 2 (a setup problem).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from catalog.errors import StepsError
from catalog.syntax_errors import yaml_error

Lines = dict[tuple, int]


def compose(text: str) -> Any:
    """The node tree of one YAML document (None for an empty one); raises `yaml.YAMLError`."""
    import yaml

    return yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def key_lines(node: Any, first_line: int = 1) -> Lines:
    """Every key path of the tree and the line of its key (of the item, for a list entry).

    `first_line` is the file line the parsed text starts on (2 for frontmatter after `---`).
    A repeated key maps to its last occurrence, the one a YAML loader keeps.
    """
    out: Lines = {}
    _walk(node, (), first_line, out)
    return out


def _walk(node: Any, prefix: tuple, first_line: int, out: Lines) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = (*prefix, k.value)
            out[key] = k.start_mark.line + first_line
            _walk(v, key, first_line, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            out[(*prefix, i)] = v.start_mark.line + first_line
            _walk(v, (*prefix, i), first_line, out)


def top_level_lines(node: Any, first_line: int = 1) -> dict[str, int]:
    """Line of each top-level key of a mapping (empty for anything else)."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + first_line for k, _ in node.value}


def find_key(node: Any, parts: list[str]) -> tuple[int | None, Any]:
    """The line of a dotted key's last part and its value node, or (None, None) when absent.

    Digit parts index lists (`data.train.0.path`).
    """
    import yaml

    line = None
    for part in parts:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if pair is None:
                return None, None
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            line = node.start_mark.line + 1
        else:
            return None, None
    return line, node


def file_key(path: str | Path, parts: list[str]) -> tuple[int | None, Any]:
    """`find_key` in a file (parsed once per version); (None, None) if unreadable or invalid."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError:
        return None, None
    return find_key(_file_node(str(path), st.st_mtime_ns, st.st_size), parts)


@functools.lru_cache(maxsize=64)
def _file_node(path: str, mtime_ns: int, size: int) -> Any:
    import yaml

    try:
        return compose(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


def line_of(lines: Lines, *keys: Any) -> int | None:
    """The line of the deepest of `keys` the file has (falls back to its parents)."""
    while keys:
        if keys in lines:
            return lines[keys]
        keys = keys[:-1]
    return None


def read_bytes(path: Path, code: str, what: str, fix: str) -> bytes:
    """The file's bytes; missing, a folder or unreadable is `code` with exit 2."""
    try:
        return path.read_bytes()
    except OSError as exc:
        reason = "does not exist" if isinstance(exc, FileNotFoundError) else None
        if isinstance(exc, IsADirectoryError):
            reason = "is a directory, not a file"
        raise StepsError(
            code,
            f"cannot read the {what}: {reason or exc.strerror or exc}",
            path=str(path),
            fix=fix,
            exit_code=2,
        ) from None


def load_yaml(
    path: Path, *, what: str, read_code: str, syntax_code: str, fix: str
) -> tuple[Any, Lines, bytes]:
    """(data, key lines, raw bytes) of a YAML file; every read or syntax error exits 2."""
    import yaml

    raw = read_bytes(path, read_code, what, fix)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise StepsError(
            read_code,
            f"the {what} is not UTF-8 text (byte 0x{raw[exc.start]:02x})",
            path=str(path),
            line=line,
            fix=f"save the {what} as UTF-8",
            exit_code=2,
        ) from None
    try:
        node = compose(text)
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path, syntax_code) from None
    return data, key_lines(node), raw
