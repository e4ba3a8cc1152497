"""How NeMo-RL's code reads its config, from the source with `ast` (nothing is imported).

Per (config class, key), with the first `file:line` that shows it:
- `reads`: `cfg["key"]` run whenever its function is (not under an `if`, loop, `try`,
  comprehension or short-circuit, nor after a conditional `return`; no soft lookup of the key
  in the function, no store or `setdefault` of it anywhere): an absent key is a KeyError.
- `gated` (under a test of some value) / `looped` (only in a loop, comprehension or `try`).
- `none_checked`: a read compared with None (directly, via a local or `self.attr`).
An expression's class comes from annotations, `self.x = config`, typed locals, `cfg["section"]`,
`cfg.get("section")` and pydantic attributes, resolved by the schema builder.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from runners.nemo_rl.schema.builder import SchemaBuilder, fields_of, options
from runners.nemo_rl.schema.source import Module, SourceIndex, absolute

DOTTED = re.compile(r"^nemo_rl(\.\w+)+$")
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPES = (*FUNCS, ast.Lambda, ast.ClassDef)
# A nested `def` is not a branch: closures such as grpo.py's `init_train_dataloader` are called.
BRANCHY = (ast.comprehension, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp)
BRANCHY += (ast.GeneratorExp, ast.Try, ast.Match)
Facts = dict[tuple[str, str], str]  # (class, key) -> "file:line"
# Functions only a config switch calls: everything they read is conditional.
SWITCHED = {
    "async_grpo_train",  # examples/run_grpo.py: only when grpo.async_grpo.enabled
}


def _refs(t: dict | None) -> list[str]:
    return [o["name"] for o in options(t) if o["t"] == "ref"] if t is not None else []


def _str_key(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_none_compare(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Compare)
        and any(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in node.ops)
        and any(isinstance(c, ast.Constant) and c.value is None for c in node.comparators)
    )


def _guarded_keys(nodes: list[ast.AST]) -> set[str]:
    """Keys the function looks up softly: `.get(k)`, `k in x`, `hasattr`, `getattr(x, k, d)`."""
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in n.ops):
            key = _str_key(n.left)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.args:
            key = _str_key(n.args[0]) if n.func.attr in {"get", "setdefault", "pop"} else None
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and len(n.args) >= 2:
            soft = n.func.id == "hasattr" or (n.func.id == "getattr" and len(n.args) == 3)
            key = _str_key(n.args[1]) if soft else None
        else:
            key = None
        if key:
            out.add(key)
    return out


def _parents(nodes: list[ast.AST]) -> dict[ast.AST, ast.AST]:
    return {c: p for p in nodes for c in ast.iter_child_nodes(p)}


def _conditional(node: ast.AST, fn: ast.AST, parents: dict) -> str | None:
    """Whether `node` runs only on some paths through `fn`: "gate" under a test of a value
    (`if`, a conditional expression, a short-circuit), "loop" in a loop, comprehension or
    `try` only (code that runs whenever there is something to iterate), else None."""
    child, p = node, parents.get(node)
    kind = None
    while p is not None and p is not fn:
        if isinstance(p, (ast.If, ast.IfExp)) and child is not p.test:
            return "gate"
        if isinstance(p, ast.BoolOp) and child is not p.values[0]:
            return "gate"
        if isinstance(p, (ast.For, ast.AsyncFor, ast.While)) and child is not getattr(
            p, "iter", getattr(p, "test", None)
        ):
            kind = "loop"
        if isinstance(p, BRANCHY):
            kind = "loop"
        child, p = p, parents.get(p)
    return kind


def _conditional_returns(fn: ast.AST) -> list[int]:
    """Lines of `return`s under a branch of `fn` (a `raise` only ends a bad config)."""
    out: list[int] = []
    todo = list(ast.iter_child_nodes(fn))
    branch = (ast.If, ast.Try, ast.With, ast.For, ast.While, ast.Match)
    while todo:
        n = todo.pop()
        if isinstance(n, SCOPES):
            continue
        if isinstance(n, branch):
            inner = list(ast.iter_child_nodes(n))
            while inner:
                m = inner.pop()
                if isinstance(m, ast.Return):
                    out.append(m.lineno)
                elif not isinstance(m, SCOPES):
                    inner.extend(ast.iter_child_nodes(m))
            continue
        todo.extend(ast.iter_child_nodes(n))
    return out


class CodeReads:
    """Walks modules of a checkout, typing config expressions by the derived schema's classes."""

    def __init__(self, builder: SchemaBuilder) -> None:
        self.builder = builder
        self.classes: dict[str, dict] = builder.classes
        self.known = dict(builder.keys)  # (module, class) -> schema key, frozen
        self.reads: dict[tuple[str, str], list[str]] = {}  # the first line in each file
        self.conditional: set[tuple[str, str]] = set()
        self.gated: Facts = {}  # read under a test of some value (the first place)
        self.looped: set[tuple[str, str]] = set()  # read in a loop, comprehension or try
        self.filled: set[tuple[str, str]] = set()
        self.none_checked: Facts = {}
        self._modname = ""  # the module being read, for constructor calls' names

    def fields(self, name: str) -> dict:
        return fields_of(self.classes, name)

    def annotation(self, ann: ast.expr | None, modname: str) -> dict | None:
        """A class type of the schema named by an annotation, else None (never adds classes)."""
        if ann is None:
            return None
        name = ann.value if isinstance(ann, ast.Constant) else None
        expr = ast.parse(name, mode="eval").body if isinstance(name, str) else ann
        names = [n.id for n in ast.walk(expr) if isinstance(n, ast.Name)]
        names += [n.attr for n in ast.walk(expr) if isinstance(n, ast.Attribute)]
        found = []
        for n in names:
            where = self.builder.resolve(modname, n)
            if where and where[0] == "class" and (where[1], where[2]) in self.known:
                found.append({"t": "ref", "name": self.known[(where[1], where[2])]})
        if not found:
            return None
        return found[0] if len(found) == 1 else {"t": "union", "options": found}

    def field_type(self, base: dict | None, key: str, models_only: bool = False) -> dict | None:
        """The record classes a key of `base` may be."""
        opts: list[dict] = []
        for name in _refs(base):
            if models_only and self.classes[name]["kind"] != "model":
                continue
            spec = self.fields(name).get(key)
            for ref in _refs(spec["type"]) if spec else []:
                if {"t": "ref", "name": ref} not in opts and ref in self.classes:
                    opts.append({"t": "ref", "name": ref})
        if not opts:
            return None
        return opts[0] if len(opts) == 1 else {"t": "union", "options": opts}

    def typeof(self, e: ast.expr, env: dict, selfenv: dict) -> dict | None:
        if isinstance(e, ast.Name):
            return env.get(e.id)
        if isinstance(e, ast.Attribute):
            if isinstance(e.value, ast.Name) and e.value.id == "self" and e.attr in selfenv:
                return selfenv[e.attr]
            return self.field_type(self.typeof(e.value, env, selfenv), e.attr, models_only=True)
        if isinstance(e, ast.Subscript) and _str_key(e.slice):
            return self.field_type(self.typeof(e.value, env, selfenv), str(_str_key(e.slice)))
        if (
            isinstance(e, ast.Call)
            and isinstance(e.func, ast.Attribute)
            and e.func.attr == "get"
            and e.args
            and _str_key(e.args[0])
        ):
            base = self.typeof(e.func.value, env, selfenv)
            return self.field_type(base, str(_str_key(e.args[0])))
        if isinstance(e, ast.Call) and isinstance(e.func, (ast.Name, ast.Attribute)):
            return self.annotation(e.func, self._modname)  # `MasterConfig(**config)`
        return None

    def owners(self, base: dict | None, key: str) -> list[str]:
        return [n for n in _refs(base) if key in self.fields(n)]

    def module(self, mod: Module, rel: str, script: bool = False) -> None:
        """Collect the facts of one module; a `script` (an example's `main()`, which takes no
        config parameter) has its functions read for typed locals too."""
        self._modname = mod.name
        for node in mod.tree.body if mod.tree else ():
            if isinstance(node, ast.ClassDef):
                self._class(node, mod.name, rel)
            elif isinstance(node, FUNCS):
                self._function(node, mod.name, rel, {}, {}, script)

    def _params(self, fn: ast.AST, modname: str) -> dict:
        args = fn.args  # type: ignore[attr-defined]
        env = {}
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            t = self.annotation(a.annotation, modname)
            if t:
                env[a.arg] = t
        return env

    def _locals(self, nodes: list[ast.AST], env: dict, selfenv: dict, modname: str) -> None:
        for n in nodes:
            if isinstance(n, ast.Assign) and len(n.targets) == 1:
                target = n.targets[0]
                if isinstance(target, ast.Name):
                    t = self.typeof(n.value, env, selfenv)
                    if t:
                        env.setdefault(target.id, t)
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                t = self.annotation(n.annotation, modname)
                t = t or (self.typeof(n.value, env, selfenv) if n.value else None)
                if t:
                    env.setdefault(n.target.id, t)

    def _class(self, node: ast.ClassDef, modname: str, rel: str) -> None:
        selfenv: dict = {}
        bound: dict[str, list[tuple[str, str]]] = {}  # self.attr -> the reads it holds
        methods = [n for n in node.body if isinstance(n, FUNCS)]
        for m in methods:
            env = self._params(m, modname)
            if not env and not selfenv:
                continue  # nothing in it can be a config yet
            nodes = list(ast.walk(m))
            self._locals(nodes, env, selfenv, modname)
            for n in nodes:
                if not (isinstance(n, ast.Assign) and len(n.targets) == 1):
                    continue
                target = n.targets[0]
                if not (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    continue
                t = self.typeof(n.value, env, selfenv)
                if t:
                    selfenv[target.attr] = t
                for owner, key in self._read_of(n.value, env, selfenv):
                    bound.setdefault(f"self.{target.attr}", []).append((owner, key))
        for m in methods:
            self._function(m, modname, rel, selfenv, bound)

    def _read_of(self, e: ast.expr, env: dict, selfenv: dict) -> Iterator[tuple[str, str]]:
        if isinstance(e, ast.Subscript) and _str_key(e.slice):
            key = str(_str_key(e.slice))
            for owner in self.owners(self.typeof(e.value, env, selfenv), key):
                yield owner, key

    def _function(
        self, fn: ast.AST, modname: str, rel: str, selfenv: dict, bound: dict, script: bool = False
    ) -> None:
        env = self._params(fn, modname)
        if not env and not selfenv and not bound and not script:
            return  # no config reaches this function by a name we can type
        nodes = list(ast.walk(fn))
        self._locals(nodes, env, selfenv, modname)
        if not env and not selfenv and not bound:
            return
        soft = _guarded_keys(nodes)
        switched = getattr(fn, "name", "") in SWITCHED
        returns = _conditional_returns(fn)
        parents = _parents(nodes)
        names = {k: [(o, key, 0) for o, key in v] for k, v in bound.items()}
        for n in nodes:
            if isinstance(n, ast.Subscript) and _str_key(n.slice):
                key = str(_str_key(n.slice))
                owners = self.owners(self.typeof(n.value, env, selfenv), key)
                if not owners:
                    continue
                if not isinstance(n.ctx, ast.Load):
                    if not script:  # a script rewrites what it read (`policy["generation"]`)
                        self.filled.update((o, key) for o in owners)
                    continue
                branch = _conditional(n, fn, parents)
                gated = key in soft or switched or branch == "gate"
                gated = gated or any(line < n.lineno for line in returns)
                for owner in owners:
                    if gated or branch:
                        self.conditional.add((owner, key))
                        if gated:
                            self.gated.setdefault((owner, key), f"{rel}:{n.lineno}")
                        else:
                            self.looped.add((owner, key))
                        continue
                    places = self.reads.setdefault((owner, key), [])
                    if not any(p.startswith(f"{rel}:") for p in places):  # first line per file
                        places.append(f"{rel}:{n.lineno}")
                parent = parents.get(n)
                if _is_none_compare(parent):
                    for owner in owners:
                        self.none_checked.setdefault((owner, key), f"{rel}:{parent.lineno}")
                if isinstance(parent, ast.Assign) and parent.value is n:
                    for target in parent.targets:
                        held = names.setdefault(ast.unparse(target), [])
                        held.extend((o, key, parent.lineno) for o in owners)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.args:
                key = _str_key(n.args[0])
                if key and n.func.attr == "setdefault":
                    base = self.typeof(n.func.value, env, selfenv)
                    self.filled.update((o, key) for o in self.owners(base, key))
        for n in nodes:
            if _is_none_compare(n):  # a compare after the name took the value
                for owner, key, line in names.get(ast.unparse(n.left), []):  # type: ignore[attr-defined]
                    if n.lineno > line:
                        self.none_checked.setdefault((owner, key), f"{rel}:{n.lineno}")


def reachable(index: SourceIndex, start: str) -> list[str]:
    """Modules the algorithm's module imports, transitively (lazy imports included), plus those
    named in strings (`"nemo_rl.models.policy.workers.dtensor_policy_worker.DTensorPolicyWorker"`:
    Ray actors are created by dotted name). Read from the text: a regex, not a tree walk."""
    seen: list[str] = []
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        mod = index.module(name)
        if mod is None:
            parent = name.rpartition(".")[0]
            if parent.startswith("nemo_rl") and parent not in seen:
                todo.append(parent)  # `module.Class`
            continue
        seen.append(name)
        if name not in index.references:
            index.references[name] = _references(mod, name)
        todo += index.references[name]
    return seen


IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
PLAIN_IMPORT = re.compile(r"^[ \t]*import[ \t]+(nemo_rl[\w.]*)", re.M)
QUOTED = re.compile(r"[\"'](nemo_rl(?:\.\w+)+)[\"']")


def _references(mod: Module, name: str) -> list[str]:
    text = mod.path.read_text(encoding="utf-8")
    package = name if mod.path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[str] = []
    for dots, written, names in IMPORT.findall(text):
        module = absolute(len(dots), written, package)
        if module.startswith("nemo_rl"):
            out.append(module)
            out += [f"{module}.{n}" for n in re.findall(r"\w+", names) if n != "as"]
    out += PLAIN_IMPORT.findall(text) + QUOTED.findall(text)
    return out
