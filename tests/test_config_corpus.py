"""The config compiler against a corpus with hand-derived expected outputs (NeMo-RL semantics).

The expected YAML files in tests/data/config_corpus/ were written from the upstream rules
(load_config + parse_hydra_overrides + resolvers), not copied from our output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from catalog.errors import StepsError
from runners.config.compiler import compile_config, load_config

CORPUS = Path(__file__).parent / "data" / "config_corpus"
CHILD = CORPUS / "child" / "child.yaml"
OVERRIDES = [
    "train.lr=3e-4",  # a.b=v on an existing key; Hydra parses 3e-4 as a float
    "+train.warmup=5",  # +a=v adds a key
    "++train.micro=4",  # ++a=v on an existing key
    "++extra_top=hello",  # ++a=v on a new key
    "~model.extra.a",  # ~a deletes
    "data.train={path: new.jsonl}",  # a dict value merges into the existing dict
    "++data.train={kind: parquet}",  # ++ with a dict merges and may add keys
    "train.schedule=[4,5]",  # a list replaces
    "model.name='quoted=x'",  # quoting keeps '=' in a value
    '+model.tag="8"',  # a quoted number stays a string
]


def _expected(name: str) -> dict:
    return yaml.safe_load((CORPUS / name).read_text(encoding="utf-8"))


def test_three_deep_chain_with_every_override_form_compiles_as_upstream(monkeypatch):
    monkeypatch.setenv("CORPUS_HOME", "/corpus/home")
    compiled = compile_config(CHILD, OVERRIDES)
    assert OmegaConf.to_container(compiled.config, resolve=False) == _expected(
        "child/expected_compiled.yaml"
    )
    assert compiled.resolved() == _expected("child/expected_resolved.yaml")


def test_sources_are_listed_parent_first_across_folders():
    compiled = load_config(CHILD)
    assert [p.resolve() for p in compiled.sources] == [
        (CORPUS / "base/grandparent.yaml").resolve(),
        (CORPUS / "mid/parent.yaml").resolve(),
        CHILD.resolve(),
    ]


def test_list_defaults_merge_in_order_with_the_child_last():
    assert load_config(CORPUS / "list" / "child.yaml").resolved() == _expected(
        "list/expected_resolved.yaml"
    )


def test_child_missing_value_does_not_clobber_but_an_unset_one_survives():
    cfg = load_config(CHILD).config
    assert cfg.train.steps == 100
    base = load_config(CORPUS / "base" / "grandparent.yaml").config
    assert OmegaConf.is_missing(base.train, "steps")


def test_top_level_override_drops_the_parent_section():
    data = OmegaConf.to_container(load_config(CORPUS / "mid" / "parent.yaml").config)
    assert data["data"] == {"train": {"path": "mid.jsonl"}, "validation": None}


def test_nested_override_marker_is_kept_literally_and_merged():
    model = OmegaConf.to_container(load_config(CHILD).config)["model"]
    assert model["tokenizer"] == {"name": "${model.name}", "_override_": True, "chat": "plain"}
    assert model["extra"] == {"_override_": True, "a": 1}


def test_oc_env_default_applies_when_the_variable_is_unset(monkeypatch):
    monkeypatch.delenv("CORPUS_HOME", raising=False)
    assert load_config(CHILD).resolved()["home"] == "/default/home"


def test_interpolations_follow_overrides():
    resolved = compile_config(CHILD, ["model.name=other"]).resolved()
    assert resolved["model"]["tokenizer"]["name"] == "other"
    assert resolved["math"]["total"] == 16 * 6


@pytest.mark.parametrize(
    ("override", "code", "needle"),
    [
        ("train.warmup=5", "E-OVERRIDE-KEY", "+train.warmup"),
        ("+train.lr=1", "E-OVERRIDE-KEY", "already exists"),
        ("~train.nope", "E-OVERRIDE-KEY", "no such key"),
        ("train.btach=3", "E-OVERRIDE-KEY", "did you mean train.batch"),
        ("data.train={extra: 1}", "E-OVERRIDE-APPLY", "~key +key"),
        ("train.lr=a=b", "E-OVERRIDE-SYNTAX", "train.lr=a=b"),
    ],
)
def test_bad_override_names_the_token_and_why(override, code, needle):
    with pytest.raises(StepsError) as err:
        compile_config(CHILD, [override])
    f = err.value.finding
    assert f.code == code
    assert needle in f.message + (f.fix or "")


def test_deleting_a_null_key_fails_as_in_hydra():
    with pytest.raises(StepsError) as err:
        compile_config(CHILD, ["~data.validation"])
    assert err.value.finding.code == "E-OVERRIDE-APPLY"
    assert "null" in err.value.finding.fix


def test_unset_env_without_default_is_located(monkeypatch, tmp_path):
    monkeypatch.delenv("CORPUS_NOPE", raising=False)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("a: 1\nb: ${oc.env:CORPUS_NOPE}\n")
    with pytest.raises(StepsError) as err:
        load_config(cfg).resolved()
    f = err.value.finding
    assert f.code == "E-CONFIG-INTERPOLATION" and f.path == str(cfg) and f.line == 2
