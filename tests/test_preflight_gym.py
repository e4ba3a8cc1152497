"""NeMo-Gym config checks: config_paths shape and existence under the Gym root, agent names."""

from __future__ import annotations

from pathlib import Path

import pytest
from preflight_fixtures import GYM_ROW, codes, gym_config, run_rules, write_rows

from catalog.nemo_rl_version import parse_version
from runners.preflight import BoundArtifact


def _only(findings: list, code: str) -> list:
    return [f for f in findings if f.code == code]


def test_config_paths_scalar_is_an_error_showing_list_syntax(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    cfg["env"]["nemo_gym"]["config_paths"] = "resources_servers/math_with_judge/configs/x.yaml"
    found = _only(run_rules(cfg), "E-GYM-CONFIG-PATH")
    assert found and found[0].key == "env.nemo_gym.config_paths"
    assert "=[" in found[0].fix


def test_missing_config_path_suggests_the_near_file(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    cfg["env"]["nemo_gym"]["config_paths"][1] = (
        "resources_servers/math_with_judge/configs/math_with_judg.yaml"
    )
    found = _only(run_rules(cfg), "E-GYM-CONFIG-PATH")
    assert [f.key for f in found] == ["env.nemo_gym.config_paths[1]"]
    assert "did you mean resources_servers/math_with_judge/configs/math_with_judge.yaml" in (
        found[0].message
    )


def test_first_config_path_must_be_the_training_model(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    cfg["env"]["nemo_gym"]["config_paths"].reverse()
    found = _only(run_rules(cfg), "E-GYM-CONFIG-PATH")
    assert [f.key for f in found] == ["env.nemo_gym.config_paths[0]"]


def test_gym_root_defaults_to_the_nemo_rl_submodule(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    root = Path(cfg.pop("run")["gym_root"])
    nemo_rl = tmp_path / "RL"
    (nemo_rl / "3rdparty" / "Gym-workspace").mkdir(parents=True)
    root.rename(nemo_rl / "3rdparty" / "Gym-workspace" / "Gym")
    assert run_rules(cfg, nemo_rl_dir=nemo_rl) == []


def test_context_gym_root_wins_over_config(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    cfg["run"]["gym_root"] = str(tmp_path / "elsewhere")
    root = tmp_path / "Gym"
    assert run_rules(cfg, gym_root=root) == []


def test_without_a_gym_root_the_paths_are_a_warning_naming_what_is_needed(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    del cfg["run"]
    findings = run_rules(cfg)
    assert not [f for f in findings if f.is_error]
    found = _only(findings, "W-GYM-ROOT")
    assert found and "3rdparty/Gym-workspace/Gym" in found[0].message


def _bound(cfg: dict) -> list[BoundArtifact]:
    """The data paths of `cfg` bound as the run binds them (the rows artifact_contracts reads)."""
    return [
        BoundArtifact(
            split, "training_jsonl", f"data.{split}.data_path", cfg["data"][split]["data_path"]
        )
        for split in ("train", "validation")
    ]


def test_row_agent_not_defined_by_configs_is_one_error_at_its_line(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    path = Path(cfg["data"]["train"]["data_path"])
    bad = {**GYM_ROW, "agent_ref": {"type": "responses_api_agents", "name": "math_simple_agent"}}
    with path.open("a") as fh:
        import json

        fh.write(json.dumps(bad) + "\n")
    findings = run_rules(cfg, inputs=_bound(cfg))
    assert not _only(findings, "E-GYM-AGENT-REF")  # one code for one cause
    found = _only(findings, "E-GYM-AGENT")
    assert len(found) == 1
    assert found[0].path == str(path) and found[0].line == 5
    assert "math_simple_agent" in found[0].message
    assert "math_with_judge_simple_agent" in found[0].fix


def test_agent_defined_only_by_an_unlisted_config_is_reported(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    cfg["env"]["nemo_gym"]["config_paths"] = cfg["env"]["nemo_gym"]["config_paths"][:1]
    write_rows(Path(cfg["data"]["validation"]["data_path"]), GYM_ROW, n=2)
    found = _only(run_rules(cfg, inputs=_bound(cfg)), "E-GYM-AGENT")
    assert {f.path for f in found} == {
        cfg["data"]["train"]["data_path"],
        cfg["data"]["validation"]["data_path"],
    }


def test_unreadable_gym_config_makes_agent_check_a_warning(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    server = tmp_path / "Gym/resources_servers/math_with_judge/configs/math_with_judge.yaml"
    server.write_text("a: [unclosed\n")
    findings = run_rules(cfg)
    assert "E-GYM-AGENT" not in codes(findings)
    assert "W-GYM-AGENT-UNCHECKED" in codes(findings)


@pytest.mark.parametrize(
    ("version", "refused"), [("0.6.0", True), ("0.7.0", False), ("pin", False)]
)
def test_gym_with_megatron_generation_is_refused_only_before_0_7_0(
    tmp_path: Path, version: str, refused: bool
) -> None:
    """As upstream's grpo-nanov3-30BA3B-2n8g-megatron_generation-async-gym recipe (v0.7.0)."""
    cfg = gym_config(tmp_path)
    cfg["policy"]["generation"]["backend"] = "megatron"
    found = run_rules(cfg, nemo_rl_version=parse_version(version))
    assert ("E-GYM-GENERATION" in codes(found)) == refused


def test_gym_without_a_vllm_cfg_section_is_refused_on_every_backend(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    cfg["policy"]["generation"]["backend"] = "megatron"
    del cfg["policy"]["generation"]["vllm_cfg"]
    found = run_rules(cfg, nemo_rl_version=parse_version("0.7.0"))
    assert [f.key for f in found if f.code == "E-GYM-GENERATION"] == ["policy.generation.vllm_cfg"]
    assert "nemo_gym.py:481" in next(f.message for f in found if f.code == "E-GYM-GENERATION")


def _dry_run(tmp_path: Path, checkout: Path, *overrides: str) -> tuple[int, list[dict]]:
    """`steps run rlvr -c nemo_gym_tiny --dry-run` against `checkout`, as a user runs it."""
    import json

    from pipeline_toys import steps_main

    proc = steps_main(
        "run", "rl/nemo_rl/rlvr", "-c", "nemo_gym_tiny", "--nemo-rl", str(checkout),
        "--dry-run", "--json", *overrides, cwd=tmp_path,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def test_a_config_path_missing_from_the_gym_tree_stops_the_dry_run(tmp_path: Path) -> None:
    """Issue 38's regression: the whole path a user takes (step, --nemo-rl checkout with its Gym
    submodule, an override naming a server config that is not there) ends in an error."""
    from preflight_fixtures import gym_root
    from run_fixtures import fake_checkout

    checkout = fake_checkout(tmp_path / "nemo-rl")
    gym_root(checkout / "3rdparty" / "Gym-workspace")
    paths = (
        "env.nemo_gym.config_paths=[responses_api_models/vllm_model/configs/"
        "vllm_model_for_training.yaml,resources_servers/math_with_judge/configs/math_wth_judge.yaml]"
    )
    code, findings = _dry_run(tmp_path, checkout, paths)
    found = [f for f in findings if f["code"] == "E-GYM-CONFIG-PATH"]
    assert code == 1 and [f["key"] for f in found] == ["env.nemo_gym.config_paths[1]"]
    assert (
        "did you mean resources_servers/math_with_judge/configs/math_with_judge.yaml"
        in (found[0]["message"])
    )


def test_an_empty_gym_submodule_is_one_finding_naming_the_submodule(tmp_path: Path) -> None:
    cfg = gym_config(tmp_path)
    empty = tmp_path / "rl" / "3rdparty" / "Gym-workspace" / "Gym"
    empty.mkdir(parents=True)
    cfg["run"]["gym_root"] = str(empty)
    found = [f for f in run_rules(cfg) if "GYM" in f.code and f.code != "E-GYM-GENERATION"]
    assert [(f.code, f.key) for f in found] == [("E-GYM-CONFIG-PATH", "env.nemo_gym.config_paths")]
    assert "submodule update --init 3rdparty/Gym-workspace/Gym" in found[0].fix
