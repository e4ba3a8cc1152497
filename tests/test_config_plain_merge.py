"""The fast config path builds exactly what OmegaConf builds: the inheritance chain merged as
plain YAML data and built once (`plain_merge`, `node_copy.build_config`), and kept configs
copied without `copy.deepcopy` (`node_copy.copy_config`). "Exactly" is node for node: classes,
metadata, values, key order, parents. Where OmegaConf's merge does more than plain data can
say, the compile falls back to OmegaConf and gets its result."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf
from upstream_corpus import corpus_root

from catalog.errors import StepsError
from runners.config.compiler import _load_with_inheritance, load_config
from runners.config.files import _omegaconf_loader
from runners.config.node_copy import NotPlain, build_config, copy_config
from runners.config.plain_merge import merge_with_override

REPO = Path(__file__).resolve().parent.parent


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


def both_paths(path: Path) -> tuple[DictConfig, DictConfig]:
    """(plain merge + build, OmegaConf's merge file by file) of one config's chain."""
    plain = build_config(_load_with_inheritance(path, [], [], plain=True))
    return plain, _load_with_inheritance(path, [], [], plain=False)


def upstream_files(*releases: str) -> list[Path]:
    """The corpus files of `releases` (folder name prefixes), else of every release."""
    root = corpus_root()
    if root is None:
        return []
    return sorted(
        p
        for folder in root.iterdir()
        if not releases or folder.name.startswith(releases)
        for p in folder.rglob("*.yaml")
    )


@pytest.mark.slow  # ~180 chains, each merged both ways (half the oldest release's and the pin's)
def test_upstream_configs_merge_as_plain_data_to_what_omegaconf_merges():
    files = [p for p in upstream_files("v0.4.0", "pin") if "defaults:" in p.read_text()][::2]
    if not files:
        pytest.skip("no upstream corpus here")
    fallbacks, compiled = [], 0
    for path in files:
        try:
            slow = _load_with_inheritance(path, [], [], plain=False)
        except StepsError as exc:  # a parent outside the corpus: the same finding either way
            with pytest.raises(StepsError) as fast:
                _load_with_inheritance(path, [], [], plain=True)
            assert fast.value.finding == exc.finding
            continue
        try:
            plain = build_config(_load_with_inheritance(path, [], [], plain=True))
        except NotPlain:
            fallbacks.append(path)
            continue
        assert_same_nodes(plain, slow, at=str(path))
        compiled += 1
    assert fallbacks == [] and compiled > 150  # all plain: the fast path is the one taken


def write(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path / "child.yaml"


PLAIN_CASES = {
    "missing_keeps_parent_and_new_keys_go_last": (
        "a: 1\nb: {x: 1, y: [1, 2]}\nc: null\n",
        "defaults: base.yaml\nz: new\nb:\n  y: [3]\n  w: ???\n  x: ???\na: ???\nc: {k: v}\n",
    ),
    "mapping_and_scalar_replace_each_other": (
        "a: {x: 1}\nb: 2\nl: [1, {q: 1}]\n",
        "defaults: base.yaml\na: 3\nb: {y: 1}\nl: null\n",
    ),
    "top_level_override_marker_replaces_and_goes_last": (
        "p: {a: 1, b: 2}\nq: {a: 1}\nr: 1\n",
        "defaults: [base.yaml]\np:\n  _override_: true\n  c: 3\nq:\n  _override_: false\n"
        "  n: {_override_: true, z: 1}\n",
    ),
    "interpolation_replaced_by_a_value": (
        "m: {name: x}\nn: ${m.name}\nk: ${mul:${m.name}, 2}\nbad: ${oops\n",
        "defaults: base.yaml\nn: y\nk: ${m.name}\nbad: 1\n",
    ),
}


@pytest.mark.parametrize("case", PLAIN_CASES)
def test_plain_merge_follows_omegaconf_merge_rules(tmp_path: Path, case: str):
    base, child = PLAIN_CASES[case]
    path = write(tmp_path, {"base.yaml": base, "child.yaml": child})
    try:
        plain, slow = both_paths(path)
    except NotPlain:
        assert case == "interpolation_replaced_by_a_value"  # `${oops` does not parse:
        with pytest.raises(StepsError, match="E-CONFIG-YAML"):  # OmegaConf refuses the file
            load_config(path)
        (tmp_path / "base.yaml").write_text(base.replace("bad: ${oops\n", ""))
        path.write_text(child.replace("bad: 1\n", ""))
        plain, slow = both_paths(path)
    assert_same_nodes(plain, slow)
    assert_same_nodes(load_config(path).config, slow)


FALLBACK_CASES = {
    "mapping_merged_into_an_interpolated_mapping": (
        "m: {a: 1, b: 2}\nn: ${m}\n",
        "defaults: base.yaml\nn: {b: 3}\n",
    ),
    "missing_over_an_interpolated_mapping": (
        "m: {a: 1}\nn: ${m}\n",
        "defaults: base.yaml\nn: ???\n",
    ),
    "marker_over_a_missing_section": (
        "p: ???\nq: 1\n",
        "defaults: base.yaml\np: {_override_: true}\n",
    ),
    "marker_that_is_not_a_bool": ("p: {a: 1}\n", "defaults: base.yaml\np: {_override_: 1}\n"),
    "missing_defaults": ("a: 1\n", "defaults: ???\nb: 1\n"),
    "not_plain_yaml": ("a: !!binary aGk=\n", "defaults: base.yaml\nb: 1\n"),
    "non_string_key": ("1: a\n", "defaults: base.yaml\nb: 1\n"),
}


@pytest.mark.parametrize("case", FALLBACK_CASES)
def test_what_plain_data_cannot_say_is_merged_by_omegaconf(tmp_path: Path, case: str):
    base, child = FALLBACK_CASES[case]
    path = write(tmp_path, {"base.yaml": base, "child.yaml": child})
    with pytest.raises(NotPlain):
        _load_with_inheritance(path, [], [], plain=True)
    slow = _load_with_inheritance(path, [], [], plain=False)
    assert_same_nodes(load_config(path).config, slow)


@pytest.mark.parametrize(("parent", "child"), [("[1]", "{b: 1}"), ("{b: 1}", "[1]")])
def test_a_list_and_a_mapping_merged_fail_as_omegaconf_fails_with_the_key_and_line(
    tmp_path: Path, parent: str, child: str
):
    files = {
        "base.yaml": f"s:\n  a: {parent}\n",
        "child.yaml": f"defaults: base.yaml\nz: 1\ns:\n  a: {child}\n",
    }
    path = write(tmp_path, files)
    with pytest.raises(NotPlain):
        merge_with_override({"a": [1]}, {"a": {"b": 1}})
    with pytest.raises(StepsError) as found:
        load_config(path)
    err = found.value.finding
    assert (err.code, err.key, err.path, err.line) == ("E-CONFIG-MERGE", "s.a", str(path), 4)
    assert "cannot be merged over its parent's value" in str(err)


def test_build_config_is_omegaconf_create_for_yaml_data(tmp_path: Path):
    from catalog.yamlfile import parse

    text = (
        "lr: 1e-5\nwhen: 2024-01-01\nhex: 0x1F\nmissing: ???\nnone: null\nyes_: yes\n"
        "interp: ${lr}\nlist: [1, '2', 3.0, [], {}, {a: [null]}]\nempty: {}\ninf: .inf\n"
    )
    data = parse(text, _omegaconf_loader())[1]
    assert_same_nodes(build_config(data), OmegaConf.create(data))
    for odd in ({1: "a"}, {"a": b"x"}, {"a": (1,)}, ["not", "a", "mapping"]):
        with pytest.raises(NotPlain):
            build_config(odd)


def test_copy_config_is_deepcopy(tmp_path: Path):
    from dataclasses import dataclass

    @dataclass
    class Typed:
        n: int = 1

    cfg = OmegaConf.create({"a": {"b": [1, {"c": "${m}"}]}, "m": "x", "n": "???", "t": Typed()})
    OmegaConf.set_readonly(cfg.a, True)
    OmegaConf.set_struct(cfg, True)
    _ = cfg.a.b[1].c  # fills flag caches
    assert_same_nodes(copy_config(cfg), copy.deepcopy(cfg))
    assert copy_config(cfg) == cfg and copy_config(cfg.a)._get_parent() is cfg
    for path in sorted(REPO.glob("steps/**/config/*.yaml"))[:20] + upstream_files()[:40]:
        loaded = load_config(path).config
        assert_same_nodes(copy_config(loaded), copy.deepcopy(loaded), at=str(path))


RESOLVE_CASES = {
    "chains_sections_and_resolvers": {
        "a": {"b": 2, "c": "${a.b}", "d": "${a.c}"},
        "sec": {"x": "${a.b}", "l": ["${a.d}", {"y": "${sec.x}"}]},
        "copy": "${sec}",
        "text": "n=${a.b}",
        "mul": "${mul:${a.b},3}",
        "rel": "${.text}",
        "missing": "???",
        "none": None,
        "escaped": "\\${a.b}",
        "env": "${oc.env:STEPS_TEST_UNSET,7}",
    },
    "reference_to_a_missing_value": {"a": "???", "b": "${a}"},
    "reference_to_a_missing_key": {"a": {}, "b": "${a.nope}"},
    "reference_to_a_parent": {"a": {"b": "${a}"}},
    "cycle": {"a": "${b}", "b": "${c}", "c": "${a}"},
    "through_an_interpolated_section": {"s": {"k": 1}, "t": "${s}", "u": "${t.k}"},
    "through_a_list": {"l": [{"k": 1}], "u": "${l.0.k}"},
    "unknown_resolver": {"a": "${nope:1}"},
}


@pytest.mark.parametrize("case", RESOLVE_CASES)
def test_resolving_gives_what_omegaconf_to_container_gives(case: str):
    from runners.config.compiler import register_resolvers
    from runners.config.resolve import resolved_container

    register_resolvers()

    def outcome(resolve):
        cfg = build_config(RESOLVE_CASES[case])
        try:
            return resolve(cfg)
        except Exception as exc:  # the same error, or it is not the same
            return type(exc), str(exc)

    theirs = outcome(lambda cfg: OmegaConf.to_container(cfg, resolve=True))
    assert outcome(resolved_container) == theirs
