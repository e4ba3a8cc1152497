"""The house: imports flow CLI -> runners -> catalog, runners' packages form layers, no circles.

Read from the modules' own source (every `import`, lazy and TYPE_CHECKING ones included), so the
map in docs/layout.md (checked against RUNNERS_FLOORS by test_readme.py) cannot drift from the code.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("steps", "runners", "catalog")

# runners' units (a top-level module or a package), top floor first. A unit may import only units
# on a lower floor: preflight judges a launch (imports launch), launch never imports preflight.
RUNNERS_FLOORS: tuple[tuple[str, ...], ...] = (
    ("runners.pipeline",),
    ("runners.run",),
    ("runners.bind", "runners.check", "runners.validate"),
    ("runners.kinds",),
    ("runners.preflight", "runners.chain"),
    ("runners.launch", "runners.rl_prep"),
    ("runners.monitor",),
    ("runners.nemo_rl",),
    ("runners.config", "runners.convert", "runners.artifacts"),
    ("runners.rundir", "runners.digest"),
    ("runners.secrets", "runners.omegaconf_internals"),
)
FLOOR = {unit: level for level, units in enumerate(RUNNERS_FLOORS) for unit in units}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The project module an imported name lives in (`a.b.func` -> `a.b`), None if not ours."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def _nodes(path: Path) -> list[ast.AST]:
    """Every node of a module, parsed once for all the tests that read it."""
    return list(ast.walk(ast.parse(path.read_text(), str(path))))


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(owner for owner in map(_owner, names) if owner)
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    """Each project module's project imports (lazy ones too), parsed once, when a test asks."""
    return {module: _imports(path) - {module} for module, path in MODULES.items()}


def _unit(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_one_that_imports_it_back():
    assert _cycles(graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_catalog_imports_neither_runners_nor_the_cli():
    upward = [(m, d) for m, deps in graph().items() for d in deps if m.startswith("catalog")]
    assert [(m, d) for m, d in upward if not d.startswith("catalog")] == []


def test_runners_never_import_the_cli():
    calls = [(m, d) for m, deps in graph().items() if m.startswith("runners") for d in deps]
    assert [(m, d) for m, d in calls if d.startswith("steps")] == []


def test_every_runners_unit_has_a_floor():
    units = {_unit(m) for m in MODULES if m.startswith("runners.")}
    assert sorted(units - set(FLOOR)) == [], "add the unit to RUNNERS_FLOORS and docs/layout.md"
    assert sorted(set(FLOOR) - units) == []


def test_runners_units_import_only_units_on_lower_floors():
    upward = sorted(
        f"{module} -> {dep}"
        for module, deps in graph().items()
        if module.startswith("runners.")
        for dep in deps
        if dep.startswith("runners.")
        and _unit(dep) != _unit(module)
        and FLOOR[_unit(dep)] <= FLOOR[_unit(module)]
    )
    assert upward == []


@pytest.mark.parametrize(
    "package", sorted(m for m, p in MODULES.items() if p.name == "__init__.py" and "." in m)
)
def test_every_runners_and_catalog_package_says_what_it_owns(package):
    if package.startswith("steps."):
        pytest.skip("steps/ folders are catalog content, documented by their READMEs")
    doc = ast.get_docstring(ast.parse(MODULES[package].read_text()))
    assert doc, f"{MODULES[package]} needs a docstring saying what the package owns"


def test_no_module_in_the_top_of_runners_belongs_to_a_package():
    loose = sorted(p.stem for p in (ROOT / "runners").glob("*.py") if p.stem != "__init__")
    packages = sorted(p.name for p in (ROOT / "runners").iterdir() if (p / "__init__.py").exists())
    assert [m for m in loose if any(m == pkg or m.startswith(f"{pkg}_") for pkg in packages)] == []
    assert loose == ["bind", "convert", "digest", "omegaconf_internals", "rundir", "secrets"]


@pytest.mark.parametrize(
    "package",
    sorted(m for m, p in MODULES.items() if p.name == "__init__.py" and m.count(".") == 1
           and m.startswith("runners.")),
)  # fmt: skip
def test_a_runners_packages_docstring_names_every_unit_it_imports(package):
    doc = ast.get_docstring(ast.parse(MODULES[package].read_text())) or ""
    assert "Owns:" in doc and "May import:" in doc, f"{package}: say what it owns and may import"
    allowed = doc.split("May import:", 1)[1]
    used = {
        _unit(dep)
        for module, deps in graph().items()
        if _unit(module) == package
        for dep in deps
        if dep.startswith("runners.") and _unit(dep) != package
    }
    assert sorted(u for u in used if f"`{u}`" not in allowed) == [], package


# Every JSON, TOML and YAML file steps opens is read by catalog/record_file.py (or
# catalog/yamlfile.py, built on it): bounded in size, UTF-8, depth. The calls below parse text
# that is not a file the tool opens, each for the reason given; a new call anywhere else (a
# record read with json.loads(path.read_text())) fails here: use record_file.read_json,
# read_toml or yamlfile.read_data.
PARSE_CALLS = {
    "json.load", "json.loads", "tomllib.load", "tomllib.loads", "tomli.load", "tomli.loads",
    "yaml.load", "yaml.safe_load", "yaml.full_load", "yaml.unsafe_load", "yaml.load_all",
    "yaml.safe_load_all", "yaml.compose", "OmegaConf.load",
}  # fmt: skip
PARSES_TEXT = {
    "catalog/record_file.py": (2, "the reader itself"),
    "catalog/yamlfile.py": (1, "the YAML reader, on record_file's bytes"),
    "runners/preflight/data_files.py": (1, "JSONL rows, one line at a time (the data's reader)"),
    "runners/bind.py": (2, "the first rows of a data file, one line at a time"),
    "runners/preflight/upstream_setup.py": (1, "the first row of a data file"),
    "runners/preflight/upstream_program.py": (1, "in a job: its request on stdin"),
    "runners/preflight/upstream_judge.py": (1, "a marked line of a judge's output or log"),
    "runners/nemo_rl/schema/builder.py": (1, "a deep copy of a derived schema's fields"),
    "runners/chain/rules.py": (1, "in a job, standard library only: training_info.json"),
    "runners/chain/segment_program.py": (1, "in a job, standard library only: the chain record"),
    "runners/chain/follow.py": (1, "the chain record as ssh printed it"),
    "runners/rl_prep/placeholders.py": (1, "a JSON value written in a blend"),
    "runners/launch/ray/sdk.py": (2, "the Ray dashboard's HTTP answers (auth mode, the rest)"),
    "runners/launch/remote_probe.py": (2, "on the cluster, standard library only"),
    "runners/launch/shell.py": (1, "a remote probe's answer on stdout"),
    "runners/launch/local.py": (1, "an interpreter probe's answer line"),
    "runners/launch/slurm/state.py": (1, "a stream of events, one line at a time"),
    "steps/cli/validate_cmd.py": (1, "a command-line option's JSON value"),
}


def _parse_calls(path: Path) -> int:
    found = 0
    for node in _nodes(path):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else None
            found += f"{name}.{node.func.attr}" in PARSE_CALLS
    return found


def test_every_record_and_config_is_read_by_the_one_bounded_reader():
    counted = {
        str(path.relative_to(ROOT)): n for path in MODULES.values() if (n := _parse_calls(path))
    }
    allowed = {module: n for module, (n, _) in PARSES_TEXT.items()}
    assert counted == allowed, "read files with catalog.record_file (see PARSES_TEXT)"
