"""`defaults:` chains merge as NeMo-RL's `load_config` merges them (`upstream_corpus.
reference_load`, upstream's own code path: `OmegaConf.load`, `OmegaConf.merge`): the compiled
config is node for node what upstream builds (classes, metadata, values, key order, parents)
on the corner cases of OmegaConf's merge, by either path: the chain merged as plain data and
built once (`plain_merge`), or merged by OmegaConf file by file where plain data cannot say
(NotPlain). Upstream's own configs are held to the same, node for node, by the corpus tests
(`upstream_corpus.check_config`)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from upstream_corpus import assert_same_nodes, reference_load

from catalog.errors import StepsError
from runners.config.compiler import _load_with_inheritance, load_config
from runners.config.plain_merge import NotPlain


def plain_path(path: Path):
    """The chain merged as plain data and built by `OmegaConf.create` (NotPlain where not)."""
    from omegaconf import OmegaConf

    return OmegaConf.create(_load_with_inheritance(path, [], [], True))


def write(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path / "child.yaml"


MERGE_CASES = {
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


MERGE_CASES |= FALLBACK_CASES


@pytest.mark.parametrize("case", MERGE_CASES)
def test_a_chain_merges_as_nemo_rls_load_config_merges_it(tmp_path: Path, case: str):
    base, child = MERGE_CASES[case]
    path = write(tmp_path, {"base.yaml": base, "child.yaml": child})
    try:
        theirs = reference_load(path)
    except Exception as exc:  # upstream refuses the chain: so do we, with a finding
        with pytest.raises(StepsError) as ours:
            load_config(path)
        assert ours.value.exit_code == 2 and ours.value.finding.code.startswith("E-CONFIG-"), exc
        return
    assert_same_nodes(load_config(path).config, theirs)
    try:
        assert_same_nodes(plain_path(path), theirs)
    except NotPlain:
        assert case in FALLBACK_CASES  # where plain data cannot say, OmegaConf merges


@pytest.mark.parametrize(("parent", "child"), [("[1]", "{b: 1}"), ("{b: 1}", "[1]")])
def test_a_list_and_a_mapping_merged_fail_as_omegaconf_fails_with_the_key_and_line(
    tmp_path: Path, parent: str, child: str
):
    files = {
        "base.yaml": f"s:\n  a: {parent}\n",
        "child.yaml": f"defaults: base.yaml\nz: 1\ns:\n  a: {child}\n",
    }
    path = write(tmp_path, files)
    with pytest.raises(StepsError) as found:
        load_config(path)
    err = found.value.finding
    assert (err.code, err.key, err.path, err.line) == ("E-CONFIG-MERGE", "s.a", str(path), 4)
    assert "cannot be merged over its parent's value" in str(err)


def test_a_kept_config_is_handed_out_as_a_fresh_copy(tmp_path: Path):
    path = write(tmp_path, {"base.yaml": "a: {b: [1]}\n", "child.yaml": "defaults: base.yaml\n"})
    first, second, third = (load_config(path).config for _ in range(3))
    first.a.b.append(2)
    assert second == {"a": {"b": [1]}}
    assert_same_nodes(second, third)
    assert_same_nodes(third, copy.deepcopy(reference_load(path)))


def test_the_same_chain_under_other_folders_is_upstreams_tree_each_time_as_a_fresh_copy(
    tmp_path: Path,
):
    files = {
        "base.yaml": "a:\n  b: [1]\n  c: ${a.b}\nd: ???\n",
        "child.yaml": "defaults: base.yaml\n",
    }
    paths = []
    for name in ("one", "two", "three"):  # the third is a copy of the tree the second kept
        (tmp_path / name).mkdir()
        paths.append(write(tmp_path / name, files))
    loaded = [load_config(path).config for path in paths]
    for path, config in zip(paths, loaded, strict=True):
        assert_same_nodes(config, reference_load(path))
    loaded[1].a.b.append(2)
    assert OmegaConf.to_container(loaded[2]) == {"a": {"b": [1], "c": "${a.b}"}, "d": "???"}


def test_recipes_of_one_parent_share_its_sections_as_fresh_copies_node_for_node(tmp_path: Path):
    """Children that each change one key of a shared parent are built from kept copies of the
    sections they leave alone (`compiler._tree`): each still upstream's tree, node for node,
    and a change to one compile's section reaches no other compile."""
    base = "policy:\n  model: m\n  opt: {lr: 0.1, betas: [0.9, 0.99], sched: {warmup: 10}}\n"
    base += "data: {train: a.jsonl, val: b.jsonl, shuffle: true, seed: 1}\n"
    files = {"base.yaml": base}
    for n in range(4):
        files[f"child{n}.yaml"] = f"defaults: base.yaml\npolicy: {{model: m{n}}}\n"
    write(tmp_path, files)
    configs = [load_config(tmp_path / f"child{n}.yaml").config for n in range(4)]
    configs[2].policy.opt.sched.warmup = 99  # the third and fourth: copies of the kept section
    configs[2].data.seed = 7
    for n, config in enumerate(configs):
        if n != 2:
            assert_same_nodes(config, reference_load(tmp_path / f"child{n}.yaml"))
    assert configs[3].policy.opt.sched.warmup == 10 and configs[3].data.seed == 1
    assert configs[3].policy.opt is not configs[2].policy.opt
