"""YAML files and the line of each key: key paths are tuples of mapping keys and list indexes,
lines 1-based; a file that cannot be read, is not UTF-8 or is not YAML is exit 2.

Reads are bounded, since a config or blend may come from someone else: regular files only, at
most `MAX_YAML_BYTES`, and at most `MAX_ALIAS_NODES` nodes added by aliases (a "billion laughs"
file is a few hundred bytes whose anchors expand to billions of nodes). A repeated key is
refused, as OmegaConf does.
"""

from __future__ import annotations

import functools
import os
import weakref
from pathlib import Path
from typing import Any

from catalog import record_file
from catalog.errors import StepsError
from catalog.syntax_errors import yaml_error

Lines = dict[tuple, int]
_INDEX: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # mapping node -> `_keys`

MAX_YAML_BYTES = 16 << 20  # configs and blends are kilobytes: a bigger file is not one
MAX_ALIAS_NODES = 100_000  # a shared block is tens of nodes; a bomb is billions
_SIZE_CAP = 1 << 62  # expanded sizes stop growing here (a chain of anchors doubles them)


def compose(text: str) -> Any:
    """The node tree of one YAML document (None for an empty one); raises `yaml.YAMLError`."""
    import yaml

    return yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def key_lines(node: Any, first_line: int = 1) -> Lines:
    """Every key path of the tree and the line of its key (of the item, for a list entry);
    `first_line` is the file line the text starts on (2 for frontmatter after `---`)."""
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
            key = (*prefix, i)
            out[key] = v.start_mark.line + first_line
            _walk(v, key, first_line, out)


def find_key(node: Any, parts: list[str]) -> tuple[int | None, Any]:
    """The line of a dotted key's last part (digits index lists) and its value node, or
    (None, None) when absent."""
    import yaml

    line = None
    for part in parts:
        if isinstance(node, yaml.MappingNode):
            pair = _keys(node).get(part)
            if pair is None:
                return None, None
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            line = node.start_mark.line + 1
        else:
            return None, None
    return line, node


def _keys(node: Any) -> dict[Any, tuple[Any, Any]]:
    """A mapping node's (key node, value node) by key, built once per node (n lookups, not n
    scans, to locate n keys)."""
    index = _INDEX.get(node)
    if index is None:
        index = {}
        for k, v in node.value:
            index.setdefault(getattr(k, "value", None), (k, v))
        _INDEX[node] = index
    return index


def file_key(path: str | Path, parts: list[str]) -> tuple[int | None, Any]:
    """`find_key` in a file (parsed once per version); (None, None) if unreadable or invalid."""
    name = os.fspath(path)  # no Path per call: a finding per key of 1e5 keys asks 1e5 times
    try:
        st = os.stat(name)
    except OSError:
        return None, None
    return find_key(_file_node(name, st.st_mtime_ns, st.st_size), parts)


@functools.lru_cache(maxsize=64)
def _file_node(path: str, mtime_ns: int, size: int) -> Any:
    import yaml

    try:
        raw = read_capped(Path(path))
        kept = _TREES.get(raw)
        return kept if kept is not None else compose(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


_TREES: dict[bytes, Any] = {}  # a file's bytes -> the node tree a loader built from them


def keep_tree(raw: bytes, node: Any) -> None:
    """Keep the node tree a config loader built from `raw` for `file_key` (a second parse is 1 s
    for 1e5 keys); not with merge keys, which building the data flattens into the tree."""
    if node is None or b"<<" in raw:
        return
    _TREES[raw] = node
    while len(_TREES) > 8:
        _TREES.pop(next(iter(_TREES)))


def read_capped(path: Path, limit: int = MAX_YAML_BYTES) -> bytes:
    """`catalog.record_file.read_capped` with the YAML cap."""
    return record_file.read_capped(path, limit)


def read_bytes(path: Path, code: str, what: str, fix: str) -> bytes:
    """The file's bytes (`read_capped`); unreadable is `code` with exit 2."""
    try:
        return read_capped(path)
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


def check_tree(node: Any) -> None:
    """Refuse a tree that aliases expand past `MAX_ALIAS_NODES` nodes (or without end) or that
    repeats a key: `yaml.YAMLError` at the line to blame. Each node is visited once."""
    import yaml

    size: dict[int, int] = {}  # id -> nodes it expands to (capped), once finished
    uses: dict[int, int] = {}  # id -> how often it is referenced
    nodes: dict[int, Any] = {}
    stack: list[tuple[Any, bool]] = [(node, False)]
    while stack:
        item, done = stack.pop()
        key = id(item)
        children = _children(item)
        if done:
            total = 1 + sum(size[id(c)] for c in children)
            size[key] = min(total, _SIZE_CAP)
            continue
        uses[key] = uses.get(key, 0) + 1
        if key in nodes:
            if key not in size:  # still open: an alias to a node that holds it
                raise _tree_error(item, "an alias refers to a node that holds it, so it never ends")
            continue
        nodes[key] = item
        if isinstance(item, yaml.MappingNode):
            _no_repeated_key(item)
        stack.append((item, True))
        stack.extend((c, False) for c in reversed(children))
    if size[id(node)] - len(nodes) > MAX_ALIAS_NODES:
        worst = max((k for k in nodes if uses[k] > 1), key=lambda k: (uses[k] - 1) * size[k])
        raise _tree_error(
            nodes[worst],
            f"aliases expand the file to more than {MAX_ALIAS_NODES} nodes (the anchor at this "
            f"line to {size[worst]:,}, used {uses[worst]} times); a billion-laughs file? "
            "write the values out instead",
        )


def _children(node: Any) -> list:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _no_repeated_key(node: Any) -> None:
    seen: dict[str, Any] = {}
    for k, _ in node.value:
        name = getattr(k, "value", None)
        if not isinstance(name, str) or name == "<<":  # merge keys may repeat
            continue
        if name in seen:
            first = seen[name].start_mark.line + 1
            raise _tree_error(k, f"found duplicate key `{name}` (first at line {first})")
        seen[name] = k


def _tree_error(node: Any, problem: str) -> Exception:
    import yaml

    return yaml.constructor.ConstructorError(None, None, problem, node.start_mark)


def parse(text: str, loader: Any = None) -> tuple[Any, Any]:
    """(node tree, data) of one YAML document, checked by `check_tree` first. A `loader` that
    refuses repeated keys itself (OmegaConf's) skips the check without anchors; default: the
    safe loader (libyaml's when PyYAML has it)."""
    import yaml

    cls = loader or getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    reader = cls(text)
    try:
        node = reader.get_single_node()
        if node is None:
            return None, None
        if loader is None or "&" in text:
            check_tree(node)
        return node, reader.construct_document(node)
    finally:
        reader.dispose()


def parse_data(raw: bytes | str) -> Any:
    """One YAML document (safe loader, aliases bounded) as data; `yaml.YAMLError` at its line,
    ValueError when not UTF-8 or nested deeper than `record_file.MAX_DEPTH`."""
    text = record_file.utf8(raw) if isinstance(raw, bytes) else raw
    return record_file.bounded(lambda: parse(text)[1])


def read_data(path: Path, limit: int = MAX_YAML_BYTES) -> Any:
    """A YAML file's data, read as `record_file.read_json` reads JSON."""
    return parse_data(record_file.read_capped(path, limit))


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
        node, data = parse(text)
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path, syntax_code) from None
    return data, key_lines(node), raw
