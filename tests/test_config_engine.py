"""One config engine for run, plan and compose: fast parsing that changes nothing, a cache that
never serves stale or shared configs, one override grammar, and the planner's view of values."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from catalog.config_values import INTERPOLATED, MISSING
from catalog.errors import StepsError
from runners.config.compiler import compile_config, load_config
from runners.config.files import load_yaml_file
from runners.config.overrides import override_keys, parse_overrides, setting_override
from runners.config.values import read_config

REPO = Path(__file__).resolve().parent.parent
YAML_FILES = sorted(
    p
    for pattern in ("steps/**/*.yaml", "pipelines/*.yaml", "tests/data/**/*.yaml")
    for p in REPO.glob(pattern)
)


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_fast_parse_gives_what_omegaconf_load_gives(path: Path):
    def outcome(load):
        try:
            return OmegaConf.to_container(load(path))
        except Exception as exc:  # the same failure counts as agreement
            return type(exc).__name__

    assert outcome(load_yaml_file) == outcome(OmegaConf.load)


def test_yaml_corner_cases_parse_as_omegaconf_parses_them(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "lr: 1e-5\nwhen: 2024-01-01\nhex: 0x1F\nmissing: ???\nnone: null\nyes_: yes\n"
        "interp: ${lr}\nlist: [1, '2', 3.0]\n"
    )
    fast, slow = load_yaml_file(path), OmegaConf.load(path)
    assert OmegaConf.to_container(fast) == OmegaConf.to_container(slow)
    path.write_text("a: 1\na: 2\n")
    with pytest.raises(Exception, match="duplicate key"):
        load_yaml_file(path)


def test_a_cached_config_is_handed_out_as_a_copy(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("a: {b: 1}\n")
    for _ in range(3):  # kept from the second load on
        loaded = load_config(path)
        assert loaded.config.a.b == 1
        loaded.config.a.b = 99
        twin = load_yaml_file(path)
        assert twin.a.b == 1
        twin.a.b = 99


def test_the_cache_sees_a_parent_rewritten_with_the_same_size(tmp_path: Path):
    (tmp_path / "base.yaml").write_text("a: 1\n")
    child = tmp_path / "child.yaml"
    child.write_text("defaults: base.yaml\nb: 2\n")
    assert load_config(child).config.a == 1
    assert load_config(child).config.a == 1  # now kept
    (tmp_path / "base.yaml").write_text("a: 7\n")  # same size, likely the same mtime tick
    assert load_config(child).config.a == 7


def test_an_interpolation_parsed_once_resolves_in_each_config_to_its_own_value(tmp_path: Path):
    """A compile keeps OmegaConf's parse tree of each `${...}` string: the same text in two
    configs (nested, or refused by the grammar) gives each config what a fresh parse gives."""
    import omegaconf.base
    from omegaconf.errors import GrammarParseError

    for n, a in enumerate((3, 5)):
        path = tmp_path / f"c{n}.yaml"
        path.write_text(f"a: {a}\nb: ${{a}}\nc: ${{mul:${{a}},2}}\n")
        assert compile_config(path).resolved() == {"a": a, "b": a, "c": 2 * a}
    kept = omegaconf.base.parse
    assert kept("${mul:${a},2}") is kept("${mul:${a},2}")  # parsed once, the tree kept
    for _ in range(2):  # a string the grammar refuses is refused each time, nothing kept
        with pytest.raises(GrammarParseError):
            OmegaConf.create({"x": "${a"})


def test_override_keys_come_from_hydras_grammar():
    tokens = ["a.b='x=y'", "+c.d=1", "++e=[1,2]", "~f.g", "h={i: 1}"]
    assert override_keys(tokens) == ["a.b", "c.d", "e", "f.g", "h"]
    assert setting_override(tokens, "h.i") == "h={i: 1}"
    assert setting_override(["a=1", "a=2"], "a") == "a=2"  # the last one is what applies
    assert setting_override(tokens, "a.bc") is None


def test_an_override_hydra_rejects_is_a_syntax_error_naming_it():
    with pytest.raises(StepsError) as err:
        parse_overrides(["ok=1", "a=b=c"])
    assert err.value.finding.code == "E-OVERRIDE-SYNTAX" and "'a=b=c'" in err.value.finding.message
    assert err.value.exit_code == 2


def test_planning_reads_values_the_way_run_compiles_them(tmp_path: Path):
    (tmp_path / "base.yaml").write_text(
        "model:\n  name: org/base\n  path: base.bin\n"
        "extra: ???\nopt: null\nout: ${model.name}/out\n"
        "data:\n  train:\n    - {name: a}\n    - {name: b, path: b.jsonl}\n"
    )
    child = tmp_path / "child.yaml"
    child.write_text("defaults: base.yaml\nmodel:\n  path: ???\n")  # ??? keeps the parent's
    values = read_config(child, ["model.name=org/other"])
    assert values.get("model.name") == "org/other"
    assert values.get("model.path") == "base.bin"
    assert values.get("extra") is MISSING
    assert values.get("opt") is MISSING and values.get("nope.deeper") is MISSING
    assert values.get("out") is INTERPOLATED
    assert values.get("data.train.path") == "b.jsonl"  # the first list entry that has the key
    assert values.get("model") == {"name": "org/other", "path": "base.bin"}
    assert values.set_by("model.name") == "model.name=org/other"
    assert values.set_by("model.path") is None


def test_planning_rejects_an_override_exactly_as_run_does(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("train: {steps: 1}\n")
    with pytest.raises(StepsError) as planned:
        read_config(path, ["train.stpes=2"])
    with pytest.raises(StepsError) as ran:
        compile_config(path, ["train.stpes=2"])
    assert planned.value.finding == ran.value.finding
    assert "did you mean train.steps" in planned.value.finding.fix
