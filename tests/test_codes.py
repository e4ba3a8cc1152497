"""The registry of codes (catalog/codes.toml): one entry per code the source raises, `explain`
prints an entry, manifests take their text from it, and docs/codes.md is rendered from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalog.codes import parse_registry, registry
from catalog.discovery import BUILTIN_ROOT
from catalog.docs import render_docs
from catalog.errors import Finding, StepsError
from catalog.manifest import StepManifest
from catalog.tomlfile import load_toml
from runners.check.codes import source_codes
from runners.preflight import _with_recovery
from steps.cli import main

REPO = Path(__file__).resolve().parent.parent
DPO = BUILTIN_ROOT / "rl" / "nemo_rl" / "dpo" / "step.toml"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_code_in_the_source_has_a_meaning_and_a_fix_and_a_severity_from_its_prefix():
    reg = registry()
    assert set(source_codes(REPO)) <= set(reg.entries)
    for code, entry in reg.entries.items():
        assert entry.meaning.strip() and entry.fix.strip(), code
        assert entry.severity == ("warning" if code.startswith("W-") else "error")


def test_explain_prints_meaning_fix_rule_and_the_steps_that_list_the_code(capsys):
    code, out, _ = run_cli(capsys, "explain", "e-dpo-row")
    assert code == 0
    assert out.startswith("E-DPO-ROW  error  (data)")
    assert "preference row" in out and "fix:" in out
    assert "artifact_contracts" in out and "step rl/nemo_rl/dpo" in out


def test_explain_json_is_the_registry_entry_with_versions_and_steps(capsys):
    code, out, _ = run_cli(capsys, "explain", "E-BATCH-DIVISIBILITY", "--json")
    doc = json.loads(out)["code"]
    assert code == 0
    assert doc["check"] == "batch_divisibility" and doc["versions"] == "all"
    assert doc["severity"] == "error" and doc["upstream"]
    assert {s["step"] for s in doc["steps"]} >= {"rl/nemo_rl/dpo", "rl/nemo_rl/rlvr"}


def test_explain_an_unknown_code_exits_2_with_did_you_mean(capsys):
    code, _, err = run_cli(capsys, "explain", "E-BATCH-DIVISIBILTY")
    assert code == 2
    assert "E-CODE-UNKNOWN" in err and "did you mean E-BATCH-DIVISIBILITY?" in err
    assert "Traceback" not in err


def test_a_manifest_code_without_its_own_text_takes_the_registrys():
    data = load_toml(DPO)
    data["errors"]["E-PROFILE"] = {}  # a user's catalog may still list codes bare
    m = StepManifest.model_validate(data)
    plain, own = m.error("E-PROFILE"), m.error("E-DPO-ROW")
    entry = registry().get("E-PROFILE")
    assert (plain.description, plain.recovery) == (entry.meaning, entry.fix)
    assert own.recovery != registry().get("E-DPO-ROW").fix  # the step's own fix wins
    assert own.description == registry().get("E-DPO-ROW").meaning


def test_a_preflight_finding_without_a_fix_gets_the_steps_then_the_registrys():
    m = StepManifest.model_validate(load_toml(DPO))
    listed = _with_recovery(Finding("E-DPO-ROW", "bad row"), m)
    unlisted = _with_recovery(Finding("E-GRPO-LOSS", "bad loss"), m)
    own = _with_recovery(Finding("E-DPO-ROW", "bad row", fix="mine"), m)
    assert listed.fix == m.error("E-DPO-ROW").recovery
    assert unlisted.fix == registry().get("E-GRPO-LOSS").fix
    assert own.fix == "mine"


def test_a_registry_entry_of_the_wrong_shape_is_a_located_setup_error(tmp_path):
    path = tmp_path / "codes.toml"
    path.write_text('[E-OK]\narea = "run"\nmeaning = "m"\nfix = "f"\n\n[E-BAD]\narea = "moon"\n')
    with pytest.raises(StepsError) as info:
        parse_registry(path)
    assert info.value.finding.code == "E-CODES-SCHEMA" and info.value.finding.line == 6


def test_docs_codes_md_lists_every_code_and_is_generated_by_docs():
    texts, _ = render_docs(BUILTIN_ROOT)
    doc = texts[REPO / "docs" / "codes.md"]
    assert all(f"`{code}`" in doc for code in registry().entries)
    assert (REPO / "docs" / "codes.md").read_text(encoding="utf-8") == doc


def test_a_steps_codes_are_its_kinds_rules_codes_and_its_own_entries(capsys):
    """dpo's manifest no longer lists E-BATCH-DIVISIBILITY: its kind's rule raises it, so show
    and explain still name it for the step; rl_prep's kind has no NeMo-RL config, so not there."""
    from catalog.step_codes import step_codes

    dpo = step_codes("nemo_rl", ["E-DPO-ROW"])
    assert dpo["E-BATCH-DIVISIBILITY"] == "batch_divisibility"
    assert dpo["E-PROFILE"] is None and dpo["E-CHAIN-TIME"] is None  # no rule: codes.toml needs
    rl_prep = step_codes("rl_prep", [])
    assert "E-BATCH-DIVISIBILITY" not in rl_prep and "E-CHAIN-TIME" not in rl_prep
    assert "E-PROFILE" in rl_prep  # needs = []: every kind
    assert "E-BATCH-DIVISIBILITY" not in (BUILTIN_ROOT / "rl/nemo_rl/dpo/step.toml").read_text()
    code, out, _ = run_cli(capsys, "show", "nemo_rl/dpo")
    assert code == 0 and "E-BATCH-DIVISIBILITY" in out and "E-PROFILE" in out
    code, out, _ = run_cli(capsys, "explain", "E-BATCH-DIVISIBILITY")
    assert "step rl/nemo_rl/dpo" in out and "step data_prep/rl_prep" not in out


def test_a_code_says_which_steps_meet_it_in_one_place(tmp_path):
    """A code with a check reaches the kinds its rule runs for; `needs` is for codes no rule
    raises, and both at once is refused."""
    path = tmp_path / "codes.toml"
    path.write_text(
        '[E-TOY]\narea = "preflight"\nmeaning = "m"\nfix = "f"\ncheck = "toy"\nneeds = []\n'
    )
    with pytest.raises(StepsError) as caught:
        parse_registry(path)
    assert caught.value.finding.code == "E-CODES-SCHEMA"
    assert "drop needs" in caught.value.finding.message
