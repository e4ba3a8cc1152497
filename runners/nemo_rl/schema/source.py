"""NeMo-RL's source as parsed modules, loaded on demand by dotted name; nothing is imported."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

CLASS_BASES = re.compile(r"^class\s+\w+\s*\(([^)]*)\)", re.MULTILINE)
WORD = re.compile(r"\w+")


@dataclass
class Module:
    """One parsed source file: its classes, module-level aliases and imported names."""

    name: str
    path: Path
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    aliases: dict[str, ast.expr] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    tree: ast.Module | None = None  # kept for the code analysis (runners.nemo_rl.schema.code_reads)


class SourceIndex:
    """Parsed NeMo-RL modules under `root/nemo_rl`, each parsed at most once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: dict[str, Module | None] = {}
        self.references: dict[str, list[str]] = {}  # module -> modules it names (code_reads)

    def module(self, name: str) -> Module | None:
        if name in self.modules:
            return self.modules[name]
        base = self.root / Path(*name.split("."))
        path = next(
            (p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None
        )
        self.modules[name] = self._parse(name, path) if path else None
        return self.modules[name]

    def _parse(self, name: str, path: Path, text: str | None = None) -> Module:
        if text is None:
            text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
        mod = Module(name, path, tree=tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                mod.classes[node.name] = node
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    mod.aliases[target.id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None and is_name(node.annotation, "TypeAlias"):
                    mod.aliases[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom):
                src = absolute(node.level, node.module, package)
                for alias in node.names:
                    mod.imports[alias.asname or alias.name] = (src, alias.name)
        return mod

    def modules_with_bases(self, names: set[str]) -> list[str]:
        """Modules defining a class whose bases mention one of `names` (others are never parsed)."""
        out = []
        for path in sorted((self.root / "nemo_rl").rglob("*.py")):
            rel = path.relative_to(self.root).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            modname = ".".join(parts)
            if modname in self.modules:
                out.append(modname)
                continue
            text = path.read_text(encoding="utf-8")
            bases = {w for m in CLASS_BASES.finditer(text) for w in WORD.findall(m.group(1))}
            if bases & names:
                self.modules[modname] = self._parse(modname, path, text)
                out.append(modname)
        return out


def absolute(level: int, module: str | None, package: str) -> str:
    """The absolute module a `from ... import` (`level` dots) names in `package`."""
    if not level:
        return module or ""
    base = package.split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def is_name(expr: ast.expr, name: str) -> bool:
    return (isinstance(expr, ast.Name) and expr.id == name) or (
        isinstance(expr, ast.Attribute) and expr.attr == name
    )


def leaf(expr: ast.expr) -> str | None:
    """`X` for `X` and `a.b.X`, else None."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None
