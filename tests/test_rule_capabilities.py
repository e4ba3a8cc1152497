"""A rule says what it needs of a step's kind, a kind says what it has: a new kind (written here
as a throwaway module) gets every rule that needs nothing, or `check` fails."""

from __future__ import annotations

import pytest

import runners.kinds
from runners.check.capabilities import capabilities
from runners.kinds import kind_for, known
from runners.preflight import RuleSpec, load_rules

TOY = """
from runners.kinds.base import RunnerKind


class Toy(RunnerKind):
    name = "{name}"
{has}

KIND = Toy()
"""


@pytest.fixture
def fifth_kind(tmp_path, monkeypatch):
    """Write a kind module in a folder of the kinds package (as a plug-in would be)."""

    def write(has: str, name: str = "toy_kube") -> str:
        (tmp_path / f"{name}.py").write_text(TOY.format(name=name, has=has), encoding="utf-8")
        monkeypatch.setattr(runners.kinds, "__path__", [*runners.kinds.__path__, str(tmp_path)])
        return name

    yield write
    import sys

    for mod in [m for m in sys.modules if m.startswith("runners.kinds.toy_")]:
        del sys.modules[mod]


def universal() -> set[str]:
    return {spec.id for spec in load_rules().values() if not spec.needs}


def test_rules_every_kind_needs_apply_to_a_new_kind_that_names_none_of_them(fifth_kind):
    name = fifth_kind("    has = frozenset()")
    assert name in known()
    has = kind_for(name).has
    applied = {spec.id for spec in load_rules().values() if spec.applies_to(has)}
    assert applied == universal()
    # the safety rules that used to list the four kinds by name
    assert {"inputs_exist", "artifact_contracts", "remote_mounts", "remote_environment"} <= applied
    assert capabilities() == []


def test_a_kind_that_does_not_say_what_it_has_fails_check(fifth_kind):
    name = fifth_kind("")
    [found] = capabilities()
    assert found.code == "E-KIND-CAPABILITIES" and name in found.message
    assert "has = frozenset" in found.fix


def test_a_kind_with_a_capability_outside_the_vocabulary_fails_check_with_did_you_mean(fifth_kind):
    fifth_kind('    has = frozenset({"nemo_rl_confg"})')
    [found] = capabilities()
    assert "'nemo_rl_confg'" in found.message and "did you mean nemo_rl_config?" in found.fix


def test_a_rule_needing_an_unknown_capability_fails_check(monkeypatch):
    from runners import preflight

    load_rules()
    spec = RuleSpec("needs_kube", lambda ctx: [], frozenset({"kube_pods"}), "test rule")
    monkeypatch.setitem(preflight.RULES, "needs_kube", spec)
    [found] = capabilities()
    assert "`needs_kube` needs 'kube_pods'" in found.message


def test_each_shipped_kind_runs_its_own_rules_and_not_another_kinds():
    def applied(kind: str) -> set[str]:
        has = kind_for(kind).has
        return {s.id for s in load_rules().values() if s.applies_to(has)}

    assert {"nemo_rl_schema", "inputs_exist"} <= applied("nemo_rl")
    assert "rl_prep_config" not in applied("nemo_rl")
    assert {"rl_prep_config", "inputs_exist"} <= applied("rl_prep")
    assert "nemo_rl_schema" not in applied("rl_prep")
    assert {"dcp_export", "artifact_contracts"} <= applied("dcp_to_hf")
    assert "remote_megatron_bridge" in applied("megatron_to_hf")


def test_a_step_of_a_kind_with_nothing_still_gets_its_missing_input_refused(tmp_path):
    from runners.preflight import BoundArtifact, PreflightContext, preflight

    missing = BoundArtifact("train", "training_jsonl", "data.train.data_path", str(tmp_path / "x"))
    ctx = PreflightContext("toy/step", None, {}, inputs=[missing], has=frozenset())
    codes = {f.code for f in preflight(ctx)}
    assert "E-INPUT-MISSING" in codes
    assert not any(c.startswith("E-SCHEMA") for c in codes)  # NeMo-RL's rules did not run
