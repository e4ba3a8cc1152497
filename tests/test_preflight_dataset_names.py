"""Dataset and processor names NeMo-RL looks up by string when it sets up data (issue 38 items
5-6): a misspelt one is refused with did-you-mean, per release's registry."""

from __future__ import annotations

import pytest
from preflight_fixtures import dpo_config, run_rules
from user_configs import cli_dry_run, judged, on

from catalog.nemo_rl_version import parse_version


def test_a_misspelt_preference_dataset_is_the_valueerror_with_did_you_mean(tmp_path) -> None:
    text = "data:\n  train:\n    dataset_name: BinaryPreferenceDatset\n"
    [error] = on(judged(tmp_path, "dpo", text, "0.7.0"), "E-DATASET-NAME")
    assert error.key == "data.train.dataset_name" and error.line == 4
    assert "preference_datasets/__init__.py:56" in error.message
    assert "did you mean 'BinaryPreferenceDataset'?" in error.message
    assert "PreferenceDataset" in error.fix


def test_a_misspelt_name_in_data_default_is_reported_once_at_the_default(tmp_path) -> None:
    text = "data:\n  default:\n    dataset_name: ResponseDatset\n"
    found = on(judged(tmp_path, "rlvr", text, "0.6.0"), "E-DATASET-NAME")
    assert [f.key for f in found] == ["data.default.dataset_name"] * 2  # train and validation
    assert "response_datasets/__init__.py:82" in found[0].message


def test_names_are_those_of_the_release_that_runs(tmp_path) -> None:
    text = "data:\n  train:\n    dataset_name: AIME2025\n"
    assert on(judged(tmp_path, "rlvr", text, "0.7.0"), "E-DATASET-NAME") == []
    [old] = on(judged(tmp_path, "rlvr", text, "0.6.0"), "E-DATASET-NAME")
    assert "NeMo-RL 0.6.0" in old.message


@pytest.mark.parametrize("name", ["HelpSteer3", "PreferenceDataset", "my_pkg.pairs.MyPairs"])
def test_known_and_dotted_preference_names_get_nothing(tmp_path, name) -> None:
    text = f"data:\n  train:\n    dataset_name: {name}\n"
    assert on(judged(tmp_path, "dpo", text, "0.7.0"), "E-DATASET-NAME") == []


def test_a_misspelt_processor_is_the_registry_assertion_with_did_you_mean(tmp_path) -> None:
    text = "data:\n  default:\n    processor: math_hf_processor\n"
    found = on(judged(tmp_path, "rlvr", text, "0.7.0"), "E-DATA-PROCESSOR")
    assert {f.key for f in found} == {"data.default.processor"}
    assert "raw_dataset.py:57" in found[0].message
    assert "did you mean 'math_hf_data_processor'?" in found[0].message


def test_the_shipped_processor_and_a_train_only_override_are_clean(tmp_path) -> None:
    text = "data:\n  train:\n    processor: math_data_processor\n"
    for version in ("0.5.0", "0.6.0", "0.7.0", "pin"):
        found = judged(tmp_path, "rlvr", text, version)
        assert on(found, "E-DATA-PROCESSOR") + on(found, "E-DATASET-NAME") == [], version


def test_dry_run_of_a_misspelt_preference_dataset_exits_1(tmp_path, monkeypatch, capsys) -> None:
    text = "data:\n  train:\n    dataset_name: BinaryPreferenceDatset\n"
    code, out = cli_dry_run(monkeypatch, capsys, tmp_path, "dpo", text, "0.7.0")
    assert code == 1
    assert [f["key"] for f in out["findings"] if f["code"] == "E-DATASET-NAME"] == [
        "data.train.dataset_name"
    ]


def test_the_0_5_0_layout_names_one_dataset_at_data_dataset_name(tmp_path) -> None:
    cfg = dpo_config(tmp_path)
    cfg["data"] = {"dataset_name": "HelpStear3", "max_input_seq_length": 1024, "shuffle": True}
    version = parse_version("0.5.0", named=True)
    [error] = on(run_rules(cfg, "dpo", nemo_rl_version=version), "E-DATASET-NAME")
    assert error.key == "data.dataset_name" and "did you mean 'HelpSteer3'?" in error.message
    assert "preference_datasets/__init__.py:73" in error.message
    cfg["data"]["dataset_name"] = "HelpSteer3"
    assert on(run_rules(cfg, "dpo", nemo_rl_version=version), "E-DATASET-NAME") == []
