"""Read a NeMo-Gym's row vocabulary from its `nemo_gym/openai_utils.py` with `ast`.

The request keys, input-item types, message roles and content parts that
`NeMoGymResponseCreateParamsNonStreaming` takes change between releases (0.7.0 added seven
request fields and nine item types). Importing Gym pulls in its whole stack and, from 0.5.0 on,
needs Python >= 3.13.14, so the file is parsed instead. Names it imports from the OpenAI SDK
are resolved by the tables below; a type that cannot be resolved is left unchecked.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from catalog.errors import StepsError
from catalog.upstream import GYM_SUBDIR

MODEL_FILE = "nemo_gym/openai_utils.py"
VERSION_FILE = "nemo_gym/package_info.py"
REQUEST_MODEL = "NeMoGymResponseCreateParamsNonStreaming"
ITEM_UNION = "NeMoGymResponseInputItem"
INPUT_MESSAGE = "NeMoGymEasyInputMessage"
OUTPUT_MESSAGE = "NeMoGymResponseOutputMessage"

# OpenAI SDK names Gym's request model uses, and the JSON type of their values.
SDK_JSON = {
    "Metadata": "object",
    "Reasoning": "object",
    "ResponsePromptParam": "object",
    "ResponseTextConfigParam": "object",
    "ResponseConversationParamParam": "object",
    "StreamOptions": "object",
    "ResponsesModel": "string",
    "ResponseIncludable": "string",
}
# OpenAI SDK classes Gym's item and content unions use, and their `type` values.
_INPUT_PARTS = ("input_text", "input_image", "input_file", "input_audio")
SDK_TYPE_VALUES: dict[str, tuple[str, ...]] = {
    "ResponseInputContentParam": _INPUT_PARTS,
    "ResponseInputMessageContentListParam": _INPUT_PARTS,
    "McpCall": ("mcp_call",),
    "McpListTools": ("mcp_list_tools",),
    "McpApprovalRequest": ("mcp_approval_request",),
    "McpApprovalResponse": ("mcp_approval_response",),
    "ResponseFileSearchToolCall": ("file_search_call",),
    "ResponseFunctionWebSearch": ("web_search_call",),
    "ResponseComputerToolCall": ("computer_call",),
    "ComputerCallOutput": ("computer_call_output",),
    "ImageGenerationCall": ("image_generation_call",),
    "ResponseCodeInterpreterToolCall": ("code_interpreter_call",),
    "LocalShellCall": ("local_shell_call",),
    "LocalShellCallOutput": ("local_shell_call_output",),
    "ResponseCustomToolCall": ("custom_tool_call",),
    "ResponseCustomToolCallOutput": ("custom_tool_call_output",),
}
_PY_JSON = (
    {"bool": "boolean", "int": "integer", "float": "number", "str": "string"}
    | dict.fromkeys(("dict", "Dict", "Mapping"), "object")
    | dict.fromkeys(("list", "List", "Sequence", "Iterable"), "array")
)
_WRAPPERS = {"Optional", "Required", "NotRequired", "Annotated", "Union"}


def gym_root_of(path: Path) -> Path | None:
    """The Gym source root at `path`: a Gym checkout or installed package folder, or a NeMo-RL
    checkout's Gym submodule; None when neither holds `nemo_gym/openai_utils.py`."""
    for root in (path, path / GYM_SUBDIR):
        if (root / MODEL_FILE).is_file():
            return root
    return None


def read_version(root: Path) -> str | None:
    """Gym's version as its package_info.py spells it (MAJOR.MINOR.PATCH + PRE_RELEASE)."""
    from catalog.package_info import package_info

    consts = package_info(root / VERSION_FILE)
    if consts is None:
        return _dist_info_version(root)
    parts = [consts.get(k) for k in ("MAJOR", "MINOR", "PATCH")]
    if all(isinstance(p, (int, str)) for p in parts):
        return ".".join(str(p) for p in parts) + str(consts.get("PRE_RELEASE") or "")
    version = consts.get("__version__")
    return version if isinstance(version, str) else _dist_info_version(root)


def _dist_info_version(root: Path) -> str | None:
    """An installed wheel's version from its dist-info beside the package (no import)."""
    for meta in sorted(root.glob("nemo_gym-*.dist-info/METADATA")):
        for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    return None


class _Module:
    """The classes and type aliases of one parsed module, and resolvers over them."""

    def __init__(self, tree: ast.Module) -> None:
        self.classes: dict[str, ast.ClassDef] = {}
        self.aliases: dict[str, ast.expr] = {}
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                self.aliases[node.targets[0].id] = node.value
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.value is not None
            ):
                self.aliases[node.target.id] = node.value

    def fields(self, cls: str) -> dict[str, ast.expr]:
        """A class's annotated fields, in order (its own body; pydantic models here are flat)."""
        node = self.classes[cls]
        return {
            s.target.id: s.annotation
            for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        }

    def json_types(self, node: ast.expr, seen: frozenset = frozenset()) -> set[str] | None:
        """The JSON types a field annotation admits; None when any part is unknown."""
        if isinstance(node, ast.Constant):
            value = node.value
            if value is None:
                return {"null"}
            if isinstance(value, str):  # a forward reference
                try:
                    return self.json_types(ast.parse(value, mode="eval").body, seen)
                except SyntaxError:
                    return None
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return _union(self.json_types(node.left, seen), self.json_types(node.right, seen))
        name = _name(node)
        if isinstance(node, ast.Subscript):
            head, args = _name(node.value), _args(node.slice)
            if head == "Literal":
                return _literal_types(args)
            if head in ("Annotated", "Required", "NotRequired"):
                return self.json_types(args[0], seen)
            if head in ("Optional", "Union"):
                out: set[str] | None = {"null"} if head == "Optional" else set()
                for arg in args:
                    out = _union(out, self.json_types(arg, seen))
                return out
            head_kind = _PY_JSON.get(head or "")
            return {head_kind} if head_kind else None
        kind = _PY_JSON.get(name or "") or SDK_JSON.get(name or "")
        if kind:
            return {kind}
        if name in self.aliases and name not in seen:
            return self.json_types(self.aliases[name], seen | {name})
        return None

    def type_values(self, name: str, seen: frozenset = frozenset()) -> set[str] | None:
        """The `type` values a class (or alias of classes) declares; None when unresolved."""
        if name in seen:
            return None
        seen = seen | {name}
        if name in self.classes:
            annotation = self.fields(name).get("type")
            if annotation is not None:
                values = _literal_values(annotation)
                if values:
                    return values
            for base in self.classes[name].bases:
                found = self.type_values(_name(base) or "", seen)
                if found:
                    return found
        if name in self.aliases:
            out: set[str] = set()
            for member, tag in self.members(self.aliases[name]):
                found = self.type_values(member, seen) or ({tag} if tag else None)
                if found is None:
                    return None
                out |= found
            return out
        found_sdk = SDK_TYPE_VALUES.get(name)
        return set(found_sdk) if found_sdk else None

    def members(self, node: ast.expr) -> list[tuple[str, str | None]]:
        """The named members of a Union/List/Annotated expression, each with its pydantic
        `Tag(...)` if it has one; `str` and None members are left out."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.members(node.left) + self.members(node.right)
        if isinstance(node, ast.Subscript):
            head, args = _name(node.value), _args(node.slice)
            if head == "Annotated":
                inner = self.members(args[0])
                tag = next((t for t in map(_tag, args[1:]) if t), None)
                return [(n, tag) for n, _ in inner] if tag and len(inner) == 1 else inner
            if head in _WRAPPERS or head in ("List", "list", "Sequence", "Iterable"):
                return [m for arg in args for m in self.members(arg)]
            return []
        name = _name(node)
        if name is None or name in ("str", "None"):
            return []
        return [(name, None)]


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _args(node: ast.expr) -> list[ast.expr]:
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def _tag(node: ast.expr) -> str | None:
    """The string of a `Tag("...")` call, else None."""
    if isinstance(node, ast.Call) and _name(node.func) == "Tag" and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def _union(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    return None if a is None or b is None else a | b


_LITERAL_JSON = {type(None): "null", bool: "boolean", int: "integer", str: "string"}


def _literal_types(args: list[ast.expr]) -> set[str] | None:
    kinds = [
        _LITERAL_JSON.get(type(a.value)) if isinstance(a, ast.Constant) else None for a in args
    ]
    return None if None in kinds else set(kinds)  # type: ignore[arg-type]


def _literal_values(node: ast.expr) -> set[str]:
    """The string values of a (possibly Required/Optional-wrapped) Literal annotation."""
    while isinstance(node, ast.Subscript) and _name(node.value) in _WRAPPERS:
        node = _args(node.slice)[0]
    if isinstance(node, ast.Subscript) and _name(node.value) == "Literal":
        return {
            a.value
            for a in _args(node.slice)
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        }
    return set()


def _is_discriminated(node: ast.expr) -> bool:
    """True when the item union is `Annotated[Union[...], Discriminator(...), ...]`: a
    message-shaped item is then validated as a message, with no lenient fallback member."""
    if isinstance(node, ast.Subscript) and _name(node.value) == "Annotated":
        return any(
            isinstance(a, ast.Call) and _name(a.func) == "Discriminator"
            for a in _args(node.slice)[1:]
        )
    return False


def derive_vocabulary(source: str, where: str = MODEL_FILE) -> dict[str, Any]:
    """The row vocabulary of one `openai_utils.py` text: request fields with their JSON types
    (None: not checked), message roles, input-item types and content-part types (None: the
    union could not be resolved, so any type is taken), and whether items are discriminated."""
    try:
        module = _Module(ast.parse(source))
    except SyntaxError as exc:
        raise _source_error(where, f"does not parse ({exc.msg}, line {exc.lineno})") from None
    for cls in (REQUEST_MODEL, INPUT_MESSAGE):
        if cls not in module.classes:
            raise _source_error(where, f"defines no class {cls}")
    fields = {}
    for key, annotation in module.fields(REQUEST_MODEL).items():
        types = module.json_types(annotation)
        fields[key] = sorted(types) if types is not None else None
    roles = _literal_values(module.fields(INPUT_MESSAGE).get("role", ast.Constant(None)))
    union = module.aliases.get(ITEM_UNION)
    items = module.type_values(ITEM_UNION) if union is not None else None
    parts: set[str] | None = set()
    for cls in (INPUT_MESSAGE, OUTPUT_MESSAGE):
        content = module.fields(cls).get("content") if cls in module.classes else None
        for member, tag in module.members(content) if content is not None else []:
            parts = _union(parts, module.type_values(member) or ({tag} if tag else None))
    return {
        "request_fields": fields,
        "message_roles": sorted(roles),
        "item_types": sorted(items) if items else None,
        "content_parts": sorted(parts) if parts else None,
        "messages_discriminated": union is not None and _is_discriminated(union),
    }


def _source_error(where: str, what: str) -> StepsError:
    return StepsError(
        "E-GYM-SOURCE",
        f"cannot read NeMo-Gym's row model: {where} {what}",
        path=where,
        fix="point --gym-version at a NeMo-Gym checkout (or give a version number that "
        "`python -m steps validate --help` lists as shipped)",
        exit_code=2,
    )
