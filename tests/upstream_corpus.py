"""The upstream corpus check: upstream's own GRPO and DPO example configs compile as NeMo-RL
compiles them and get no error from preflight but the paths that do not exist on this machine
(issue 29 item 4). One test module per release (`test_upstream_corpus_<release>.py`, made by
`corpus_test`), so that xdist's whole-file workers check the releases side by side; each holds
one test that checks every file of its release (or part) and names each file that fails.

The corpus is `examples/configs/` of every NeMo-RL release from v0.4.0 and the pin, unmodified
(`../shared/fixtures/nemo-rl/configs/<version>/`). Each file is compiled by `steps` for its own
version (shipped schema, overlays, one override) and by a reference of NeMo-RL's
`load_config` + `parse_hydra_overrides` written here from upstream's rules; both must build
the same OmegaConf nodes (classes, metadata, key order, parents: `assert_same_nodes`), taking
the plain-merge path (equal nodes resolve to the same dict). Preflight then runs as a dry run does,
without a launch or a step of ours.
The reference loads each file once per process: nearly every parent is itself a file of the
corpus, so a file's load is kept pickled when another file of the module names it (a copy per
use), as is each list of parents merged; a release in parts is split by whole families of
recipes (`release_part`) so that a parent and its children are checked in one process. It runs
in the process our compile ran in, so OmegaConf's parse of each `${...}` string is kept for it
too (`omegaconf_internals.parse_interpolations_once`: the tree a fresh parse gives). Nothing is
shared between releases: their rules differ, and no file's chain (the file and its parents) is
the same in two releases (the top configs, e.g. grpo_math_1B.yaml, change in every release).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
import traceback
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from catalog.nemo_rl_version import parse_version
from runners.config.compiler import MERGED_BY_OMEGACONF
from runners.nemo_rl import checkout as nemo_rl
from runners.preflight import PreflightContext, preflight

REPO = Path(__file__).resolve().parents[1]
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
OVERRIDES = ["++logger.wandb_enabled=false"]  # what an offline try of a recipe sets
# What a path that exists on the cluster but not here gives (data, model, Gym configs).
PATH_CODES = {"E-INPUT-MISSING", "E-TOKENIZER-PATH", "E-GYM-CONFIG-PATH"}
# True findings on upstream's own files: the code each gets, and why it is right.
TP_ESCAPE = (
    "E-TP-LOGPROB-BATCH",
    "TP >= 4 with train_micro_batch_size != logprob_batch_size: upstream runs it only with "
    "NRL_IGNORE_TP_ACCURACY_CHECK=1 (tests/test_suites/llm/*.sh export it; v0.7.0 "
    "tests/unit/test_config_validation.py:168-179 skips these files)",
)
BATCH_MULTIPLIER = (
    "E-GRPO-SAMPLING",
    "inherits grpo.batch_multiplier 1.5 from prorlv2 and sets use_dynamic_sampling false: "
    "grpo.py asserts batch_multiplier == 1 (v0.6.0 :292-294, v0.7.0 :343-345, pin :571-573)",
)
KNOWN = {
    "recipes/llm/grpo-gemma3-27b-it-8n4g-fsdp2tp4-actckpt-long.yaml": TP_ESCAPE,
    "recipes/llm/grpo-gemma3-27b-it-8n8g-fsdp2tp8-actckpt-long.yaml": TP_ESCAPE,
    "recipes/llm/grpo-qwen3-30ba3b-8n8g-megatron.yaml": TP_ESCAPE,
    "recipes/llm/performance/grpo-qwen3-30ba3b-4n8g-40K.yaml": TP_ESCAPE,
    "recipes/llm/performance/grpo-qwen3-32b-4n8g.yaml": TP_ESCAPE,  # v0.6.0: TP 4, lbs 2
    "recipes/llm/performance/grpo-qwen3-32b-8n8g-async-1off.yaml": TP_ESCAPE,  # v0.6.0
    "prorlv2_1_moe.yaml": BATCH_MULTIPLIER,
    "prorlv2_1_moe.v2.yaml": BATCH_MULTIPLIER,
}
REFERENCE_RESOLVERS = {
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": lambda a, b: max(a, b),
    "add": lambda a, b: a + b,
}
ENV = {"HF_HOME": "/nonexistent/hf_home"}  # upstream's mopd recipes read ${oc.env:HF_HOME}


def corpus_root() -> Path | None:
    for shared in (REPO / "shared", REPO.parent / "shared"):
        if (shared / "fixtures" / "nemo-rl" / "configs").is_dir():
            return shared / "fixtures" / "nemo-rl" / "configs"
    return None


def version_name(folder: str) -> str:
    return "pin" if folder.startswith("pin") else folder.removeprefix("v")


@cache
def _yaml(path: Path) -> dict:
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER)
    return data if isinstance(data, dict) else {}


def _parents(path: Path) -> list[Path]:
    found = _yaml(path).get("defaults") or []
    return [path.parent / str(p) for p in ([found] if isinstance(found, str) else found)]


def chain_outside(path: Path, root: Path) -> Path | None:
    """The first parent in the `defaults:` chain that is not in the corpus (upstream keeps it
    outside examples/configs/, e.g. examples/nemo_gym/), else None."""
    for parent in _parents(path):
        if not parent.is_file():
            return parent
        missing = chain_outside(parent, root)
        if missing is not None:
            return missing
    return None


def algorithm_of(path: Path) -> str | None:
    """`grpo` or `dpo` when the file or a parent has that section (what selects the script);
    with a parent outside the corpus, upstream's recipe name says (`grpo-...`, `dpo-...`)."""
    keys = set(_yaml(path))
    for parent in _parents(path):
        keys.add((algorithm_of(parent) if parent.is_file() else _named(path)) or "")
    return next((a for a in ("grpo", "dpo") if a in keys), None)


def _named(path: Path) -> str | None:
    return next((a for a in ("grpo", "dpo") if path.name.startswith((a, f"vlm_{a}"))), None)


@cache  # a release checked in parts is listed once per process
def corpus(version: str | None = None) -> list[tuple[str, str, str]]:
    """(version folder, path relative to it, algorithm) of every GRPO and DPO file (of the one
    release `version`, `0.7.0` or `pin`, if given)."""
    root = corpus_root()
    if root is None:
        return []
    return [case for case in _listing(root) if version in (None, version_name(case[0]))]


@cache
def _listing(root: Path) -> list[tuple[str, str, str]]:
    """Every release's cases; kept on disk under the files' names, sizes and mtimes, since
    finding each file's algorithm parses ~1,000 files (~0.7 s) in every worker's collection."""
    paths = sorted(root.glob("*/**/*.yaml"))
    stats = [(p.relative_to(root).as_posix(), *_size_mtime(p)) for p in paths]
    key = hashlib.sha256(json.dumps([str(root), stats]).encode()).hexdigest()
    kept = Path(tempfile.gettempdir()) / f"steps-tests-corpus-{os.getuid()}-{key[:24]}.json"
    try:
        return [tuple(case) for case in json.loads(kept.read_text(encoding="utf-8"))]
    except (OSError, ValueError):
        pass
    out = []
    for path in paths:
        algo = algorithm_of(path)
        if algo is not None:
            folder, rel = path.relative_to(root).as_posix().split("/", 1)
            out.append((folder, rel, algo))
    partial = kept.with_name(f"{kept.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(out), encoding="utf-8")
    partial.replace(kept)
    return out


def _size_mtime(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


# Releases with the most files are checked in parts (`release_part`), one module each.
PARTS = {"pin": 2, "0.7.0": 2}


def module_names(version: str) -> list[str]:
    """The test modules that check one release's files: `test_upstream_corpus_v0_6_0.py`, or
    `test_upstream_corpus_pin_part1.py` and `..._part2.py` for a release in PARTS."""
    slug = version if version == "pin" else "v" + version.replace(".", "_")
    parts = PARTS.get(version, 1)
    if parts == 1:
        return [f"test_upstream_corpus_{slug}.py"]
    return [f"test_upstream_corpus_{slug}_part{n}.py" for n in range(1, parts + 1)]


def _merge_marked(base: DictConfig, child: DictConfig) -> DictConfig:
    """A top-level section marked `_override_: true` replaces the parent's (upstream's
    merge_with_override); deeper markers stay as written. Both inputs are fresh and used only
    here, so OmegaConf's `unsafe_merge` (its `merge` without first copying the inputs) gives
    what upstream's `OmegaConf.merge` gives."""
    for key in list(child.keys()):
        if OmegaConf.is_missing(child, key):  # `???` kept for later (config.py:37 at the pin)
            continue
        section = child[key]
        if isinstance(section, DictConfig) and section.get("_override_", False):
            section.pop("_override_")
            if key in base:
                base.pop(key)
    return OmegaConf.unsafe_merge(base, child)  # type: ignore[return-value]


# Each file's `reference_load`, pickled, while the files checked name it as a parent (`keep_loads`):
# most of a release's recipes are also another's parent, so each is loaded once per process.
_LOADS: dict[Path, bytes] = {}
_KEEP: set[Path] = set()


def keep_loads(paths: Iterable[Path]) -> None:
    """Keep the loads of these files (the parents of the files about to be checked)."""
    _KEEP.update(p.resolve() for p in paths)


def reference_load(path: Path) -> DictConfig:
    """NeMo-RL's load_config: OmegaConf.load, then parents (a name or a list, relative to the
    file's folder) merged in order, depth first, and the file itself last. A new config (a copy
    of the kept one for a file loaded before as a parent or named in `keep_loads`)."""
    real = path.resolve()
    kept = _LOADS.get(real)
    if kept is not None:
        return pickle.loads(kept)
    config = OmegaConf.load(path)
    assert isinstance(config, DictConfig)
    if "defaults" in config:
        parents = config.pop("defaults")
        names = [parents] if isinstance(parents, str) else [str(p) for p in parents]
        merged = pickle.loads(_merged_parents(tuple((path.parent / n).resolve() for n in names)))
        config = _merge_marked(merged, config)
    if real in _KEEP:
        _LOADS[real] = pickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL)
    return config


@cache
def _merged_parents(paths: tuple[Path, ...]) -> bytes:
    """The parents' `reference_load`s merged in order into an empty config, pickled: computed
    once per list, as most recipes share one parent (unpickling is a fresh copy, ~6x cheaper
    than `copy.deepcopy`)."""
    merged: DictConfig = OmegaConf.create({})
    for path in paths:
        if path not in _LOADS:
            _KEEP.add(path)
            reference_load(path)
        merged = _merge_marked(merged, pickle.loads(_LOADS[path]))
    return pickle.dumps(merged, protocol=pickle.HIGHEST_PROTOCOL)


def reference_compile(path: Path, overrides: list[str]) -> DictConfig:
    """load_config and parse_hydra_overrides (struct mode, Hydra's own parser and applier), with
    the resolvers NeMo-RL's utils/config.py registers (mul, div, max; the pin adds add)."""
    for name, fn in REFERENCE_RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)
    config = reference_load(path)
    OmegaConf.set_struct(config, True)
    parsed = OverridesParser.create().parse_overrides(overrides=overrides)
    ConfigLoaderImpl._apply_overrides_to_config(overrides=parsed, cfg=config)
    OmegaConf.set_struct(config, False)
    return config


def assert_same_nodes(a: Any, b: Any, parent_a: Any = None, parent_b: Any = None, at: str = ""):
    """`a` and `b` are the same OmegaConf tree, down to metadata (flag caches aside)."""
    assert type(a) is type(b), at
    da, db = a.__dict__, b.__dict__
    assert da.keys() == db.keys(), at
    assert da["_parent"] is parent_a and db["_parent"] is parent_b, at
    ma, mb = da["_metadata"], db["_metadata"]
    assert type(ma) is type(mb) and ma.__dict__ == mb.__dict__ and ma is not mb, at
    assert ma.flags is not mb.flags and ma.resolver_cache is not mb.resolver_cache, at
    content = da.get("_content")
    if isinstance(content, dict):
        assert list(content) == list(db["_content"]), at
        for key, node in content.items():
            assert_same_nodes(node, db["_content"][key], a, b, f"{at}.{key}")
    elif isinstance(content, list):
        assert len(content) == len(db["_content"]), at
        for i, node in enumerate(content):
            assert_same_nodes(node, db["_content"][i], a, b, f"{at}[{i}]")
    for key in da.keys() - {"_parent", "_metadata", "_content", "_flags_cache"}:
        assert da[key] == db[key] and type(da[key]) is type(db[key]), f"{at}: {key}"


def check_config(folder: str, rel: str, algo: str) -> str | None:
    """One upstream file: compiled by us as by the reference, and no error but missing paths.
    Raises what is wrong; returns why the file cannot be checked here, if it cannot."""
    root = corpus_root()
    assert root is not None
    path = root / folder / rel
    outside = chain_outside(path, root)
    if outside is not None:
        where = Path(os.path.relpath(outside, root / folder)).as_posix()
        return f"parent {where} lives outside examples/configs/ (not in the corpus)"
    version = parse_version(version_name(folder), source="corpus", named=True)
    compiled = nemo_rl.compile_for(nemo_rl.Target(None, version), algo, path, OVERRIDES)
    theirs = reference_compile(path, OVERRIDES)
    assert_same_nodes(compiled.config, theirs, at=f"{folder}/{rel}")
    assert MERGED_BY_OMEGACONF[str(path)] == 0  # merged as plain data: the fast path is taken
    # Equal nodes resolve alike: one process, one set of resolvers (whichever registered first).
    resolved = compiled.resolved()
    ctx = PreflightContext(
        step_id=f"upstream/{algo}",
        manifest=None,
        config=resolved,
        config_file=path,
        compiled=compiled,
        nemo_rl_version=version,
    )
    errors = {f.code: f.message for f in preflight(ctx) if f.is_error}
    unexpected = {c: m for c, m in errors.items() if c not in PATH_CODES}
    known = KNOWN.get(rel)
    if known is not None and known[0] in unexpected:
        unexpected.pop(known[0])
    assert unexpected == {}, f"{folder}/{rel}"
    return None


def check_files(cases: list[tuple[str, str, str]]) -> tuple[list[str], list[str]]:
    """Every file of `cases` checked (`check_config`), one after another in this process, each
    parent loaded once for all its children (`keep_loads`): what went wrong, one line per file
    that failed, and the files that could not be checked here, with why."""
    root = corpus_root()
    assert root is not None
    keep_loads(q for case in cases for q in _parents(root / case[0] / case[1]) if q.is_file())
    failed, skipped = [], []
    for folder, rel, algo in cases:
        try:
            why = check_config(folder, rel, algo)
        except Exception as exc:  # every file is checked; each failure is told with its file
            text = "".join(traceback.format_exception_only(exc)).strip()
            failed.append(f"{folder}/{rel}: {text}")
            continue
        if why is not None:
            skipped.append(f"{folder}/{rel}: {why}")
    return failed, skipped


def family(path: Path) -> Path:
    """The file below the top of `path`'s chain of first parents (itself at the top or just
    below): a recipe, its parent recipe and their children share one, so a part that holds
    a family loads each of its parents once."""
    chain = [path]
    while True:
        found = [p for p in _parents(chain[-1]) if p.is_file()]
        if not found or len(chain) > 64:
            break
        chain.append(found[0])
    return chain[-2] if len(chain) > 1 else chain[0]


def release_part(version: str, part: int = 1) -> list[tuple[str, str, str]]:
    """The files of one release that its `part` of PARTS checks: whole families (`family`),
    the largest first, each to the part with the fewest files so far."""
    parts = PARTS.get(version, 1)
    assert 1 <= part <= parts, f"NeMo-RL {version} is checked in {parts} part(s)"
    cases = corpus(version)
    root = corpus_root()
    if parts == 1 or root is None:
        return cases
    families: dict[Path, list[tuple[str, str, str]]] = {}
    for case in cases:
        families.setdefault(family(root / case[0] / case[1]), []).append(case)
    split: list[list[tuple[str, str, str]]] = [[] for _ in range(parts)]
    for _, members in sorted(families.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        min(split, key=len).extend(members)
    return sorted(split[part - 1])


def corpus_test(version: str, part: int = 1) -> Callable[..., None]:
    """The test of every GRPO and DPO file of one release (of its `part` of PARTS), for its
    module to hold: one test for them all, each file's failure told with its name."""

    @pytest.mark.slow  # each file compiled twice and dry-run: 5-15 s a module on two cores
    def test_upstream_configs_compile_as_nemo_rl_and_get_no_false_error(
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        cases = release_part(version, part)
        if not cases:
            pytest.skip("no shared/fixtures/nemo-rl/configs next to this checkout")
        for name, value in ENV.items():
            monkeypatch.setenv(name, value)
        failed, skipped = check_files(cases)
        print(f"{len(cases) - len(skipped)} of {len(cases)} files checked", *skipped, sep="\n")
        assert failed == [], f"{len(failed)} of {len(cases)} files:\n" + "\n".join(failed)
        assert len(skipped) < len(cases) // 4, skipped  # the corpus is mostly checkable

    return test_upstream_configs_compile_as_nemo_rl_and_get_no_false_error
