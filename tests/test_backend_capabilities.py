"""A remote rule says what its backend needs (`on`), a backend says what it has and decides every
way executors differ (runners/launch/backends/base.py): a third backend, written here as a
throwaway module, is judged by every remote rule that applies to it, or `check` fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import runners.launch.backends
from runners.check.capabilities import capabilities
from runners.launch.backends import known, traits
from runners.preflight import BoundArtifact, PreflightContext, RuleSpec, load_rules, preflight

TOY = """
from pydantic import BaseModel, ConfigDict

from runners.launch.backends.base import BackendTraits


class KubeProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    executor: str
    namespace: str = "default"
    env: dict[str, str] = {{}}
    secrets: list[str] = []
    nemo_rl_dir: str | None = None
    remote_dir: str = "/"


class Kube(BackendTraits):
    name = "{name}"
{decisions}

BACKEND = Kube
"""

DECISIONS = {
    "has": "frozenset()",
    "title": '"Kube"',
    "chain": '"attached"',
    "located_by": '"namespace"',
    "log_is_file": "False",
    "profile_model": "KubeProfile",
    "implementation": "staticmethod(lambda: object)",
}


@pytest.fixture
def third_backend(tmp_path, monkeypatch):
    """Write a backend module in a folder of the backends package (as a plug-in would be)."""

    def write(name: str = "toy_kube", **decisions: str | None) -> str:
        chosen = {**DECISIONS, **decisions}
        lines = "\n".join(f"    {k} = {v}" for k, v in chosen.items() if v is not None)
        text = TOY.format(name=name, decisions=lines)
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
        path = [*runners.launch.backends.__path__, str(tmp_path)]
        monkeypatch.setattr(runners.launch.backends, "__path__", path)
        return name

    yield write
    for mod in [m for m in sys.modules if m.startswith("runners.launch.backends.toy_")]:
        del sys.modules[mod]


def remote_rules() -> dict[str, RuleSpec]:
    return {i: s for i, s in load_rules().items() if s.on is not None}


def test_a_third_backend_gets_every_remote_rule_its_capabilities_allow(third_backend):
    name = third_backend()
    assert name in known()
    assert capabilities() == []
    has = traits(name).has
    applied = {i for i, s in remote_rules().items() if s.on <= has}
    assert applied == {i for i, s in remote_rules().items() if not s.on}
    assert {"remote_environment", "remote_inputs", "remote_stage", "remote_nemo_rl"} <= applied
    # Slurm's and Ray's own rules are not guessed for it
    assert not {"remote_mounts", "remote_sbatch_defaults", "remote_ray"} & applied


def test_a_third_backends_profile_and_launch_are_judged_by_those_rules(third_backend, tmp_path):
    from runners.launch.profiles.env_toml import load_profile
    from runners.launch.request import RemoteFacts

    name = third_backend()
    env_file = tmp_path / "env.toml"
    env_file.write_text(
        f'[k8s]\nexecutor = "{name}"\nnamespace = "rl"\n'
        'env = { WANDB_API_KEY = "0123456789abcdef0123456789abcdef01234567" }\n',
        encoding="utf-8",
    )
    profile = load_profile(env_file, "k8s", env={})
    assert type(profile).__name__ == "KubeProfile" and profile.namespace == "rl"
    data = "/data/train.jsonl"
    facts = RemoteFacts("k8s", profile, "/outside/any/mount", env_file=str(env_file))
    facts.exists = {data: False}
    missing = BoundArtifact("train", "training_jsonl", "data.train.data_path", data)
    ctx = PreflightContext("toy/step", None, {}, inputs=[missing], has=frozenset(), remote=facts)
    found = {(f.code, f.line) for f in preflight(ctx)}
    assert ("E-REMOTE-SECRET-INLINE", 4) in found  # env.toml line of the secret
    assert ("E-INPUT-MISSING", None) in found
    assert not any(code == "E-REMOTE-MOUNT" for code, _ in found)  # no mounts on this backend


def test_a_third_backend_chooses_how_its_chain_is_driven(third_backend):
    from runners.chain.record import ChainRecord

    name = third_backend(chain='"attached"')
    assert ChainRecord(executor=name, checkpoint_dir="/c", job_name="j").attached
    assert not ChainRecord(executor="slurm", checkpoint_dir="/c", job_name="j").attached


@pytest.mark.parametrize("decision", sorted(DECISIONS))
def test_a_backend_that_leaves_a_decision_open_fails_check(third_backend, decision):
    name = third_backend(**{decision: None})
    [found] = capabilities()
    assert found.code == "E-BACKEND-CAPABILITIES"
    assert f"backend '{name}' does not decide `{decision}`" in found.message
    assert found.path == f"runners/launch/backends/{name}.py" and f"`{decision}`" in found.fix


def test_a_backend_with_a_capability_outside_the_vocabulary_fails_check(third_backend):
    third_backend(has='frozenset({"container_mount"})')
    [found] = capabilities()
    assert "'container_mount'" in found.message
    assert "did you mean container_mounts?" in found.fix


def test_a_module_without_backend_fails_check(tmp_path, monkeypatch):
    (tmp_path / "toy_empty.py").write_text("X = 1\n", encoding="utf-8")
    monkeypatch.setattr(runners.launch.backends, "__path__", [str(tmp_path)])
    try:
        [found] = capabilities()
    finally:
        sys.modules.pop("runners.launch.backends.toy_empty", None)
    assert "exports no BACKEND" in found.message


def test_a_remote_rule_that_does_not_say_what_its_backend_needs_fails_check(monkeypatch):
    from runners import preflight as pf

    def undecided(ctx):
        return []

    undecided.__module__ = "runners.preflight.remote"
    load_rules()
    monkeypatch.setitem(
        pf.RULES, "remote_kube", RuleSpec("remote_kube", undecided, frozenset(), "")
    )
    monkeypatch.setitem(
        pf.RULES,
        "remote_pods",
        RuleSpec("remote_pods", undecided, frozenset(), "", on=frozenset({"pods"})),
    )
    found = sorted(f.message for f in capabilities())
    assert len(found) == 2
    assert "`remote_kube` does not say what its backend needs" in found[1]
    assert "`remote_pods` is on 'pods'" in found[0]


def test_each_shipped_backend_runs_its_own_remote_rules_and_not_the_others():
    def applied(executor: str) -> set[str]:
        has = traits(executor).has
        return {i for i, s in remote_rules().items() if s.on <= has}

    assert {"remote_mounts", "remote_sbatch_defaults", "remote_allocation", "remote_cpus"} <= (
        applied("slurm")
    )
    assert "remote_ray" not in applied("slurm")
    assert "remote_ray" in applied("ray")
    assert not {"remote_mounts", "remote_sbatch_defaults"} & applied("ray")
    assert set(known()) >= {"ray", "slurm"} and Path(runners.launch.backends.__file__).is_file()
