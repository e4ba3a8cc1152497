"""Artifacts by name: the registry under the runs root, `--input PORT=NAME:ALIAS`, `lineage`.

Real runs (`steps run data_prep/rl_prep -c tiny`, a dry run of rlvr against a fake NeMo-RL
checkout with a minimal Gym tree) and real registry files in tmp_path.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
from pathlib import Path

import pytest
from preflight_fixtures import gym_root
from run_fixtures import clean_env, fake_checkout

from catalog.errors import StepsError
from catalog.types import load_catalog_types
from runners.artifacts.names import artifact_name, parse_ref
from runners.artifacts.registry import (
    Output,
    Provenance,
    load,
    lookup,
    register,
    registry_path,
)
from runners.artifacts.resolve import resolve_inputs
from runners.digest import DigestMemo


def _register(root: Path, path: Path, name: str = "DataBlendsArtifact-rl", type_="training_jsonl"):
    made = Provenance(step="data_prep/rl_prep", run_dir=str(root / "r"))
    memo = DigestMemo(root / "memo.json")
    return register(root, [Output(name, type_, str(path), "data")], made, memo)


def _data(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rows.jsonl").write_text(text, encoding="utf-8")
    return folder


def test_names_follow_the_nemotron_convention():
    assert artifact_name("data_prep/rl_prep", "training_jsonl", False) == "DataBlendsArtifact-rl"
    assert artifact_name("rl/nemo_rl/rlvr", "nemo_rl_checkpoint", True) == "ModelArtifact-rlvr"
    assert str(parse_ref("DataBlendsArtifact-rl")) == "DataBlendsArtifact-rl:latest"
    assert parse_ref("ModelArtifact-rlvr:v3").version == 3
    assert parse_ref("out/rl_prep/tiny") is None  # a path is never a reference
    assert parse_ref("meta-llama/Llama-3.2-1B") is None  # nor a hub id


def test_new_content_is_a_new_version_and_latest_moves_to_it(tmp_path):
    root = tmp_path / "runs"
    first = _data(tmp_path / "a", '{"x": 1}\n')
    [r0] = _register(root, first)
    [again] = _register(root, first)  # the same content made again keeps its version
    second = _data(tmp_path / "b", '{"x": 2}\n')
    [r1] = _register(root, second)
    assert (str(r0), again.new, str(r1)) == (
        "DataBlendsArtifact-rl:v0",
        False,
        "DataBlendsArtifact-rl:v1",
    )
    reg = load(root)
    assert reg.artifacts["DataBlendsArtifact-rl"].aliases == {"latest": 1}
    assert lookup(reg, parse_ref("DataBlendsArtifact-rl:latest"), root).path == str(second)
    assert lookup(reg, parse_ref("DataBlendsArtifact-rl:v0"), root).path == str(first)
    assert r0.version.digest != r1.version.digest and r0.version.digest.startswith("xxh3_128:")


def test_an_alias_set_in_the_registry_file_resolves(tmp_path):
    root = tmp_path / "runs"
    _register(root, _data(tmp_path / "a", "{}\n"))
    _register(root, _data(tmp_path / "b", '{"y": 1}\n'))
    doc = json.loads(registry_path(root).read_text())
    doc["artifacts"]["DataBlendsArtifact-rl"]["aliases"]["nano3-rl-data"] = 0
    registry_path(root).write_text(json.dumps(doc))
    v = lookup(load(root), parse_ref("DataBlendsArtifact-rl:nano3-rl-data"), root)
    assert v.path == str(tmp_path / "a")


def test_a_missing_name_is_e_artifact_unknown_with_did_you_mean(tmp_path):
    root = tmp_path / "runs"
    _register(root, _data(tmp_path / "a", "{}\n"))
    with pytest.raises(StepsError) as err:
        lookup(load(root), parse_ref("DataBlendArtifact-rl:latest"), root)
    f = err.value.finding
    assert f.code == "E-ARTIFACT-UNKNOWN" and err.value.exit_code == 2
    assert "did you mean DataBlendsArtifact-rl?" in f.fix
    with pytest.raises(StepsError) as err:
        lookup(load(root), parse_ref("DataBlendsArtifact-rl:v7"), root)
    assert "use one of: latest, v0" in err.value.finding.fix


def test_an_artifact_of_an_unrelated_type_is_refused_for_a_port(tmp_path):
    root = tmp_path / "runs"
    ckpt = _data(tmp_path / "ckpt", "{}\n")
    _register(root, ckpt, "ModelArtifact-rlvr", "nemo_rl_megatron_checkpoint")
    graph = load_catalog_types()
    with pytest.raises(StepsError) as err:
        resolve_inputs({"train": "ModelArtifact-rlvr:latest"}, {"train": "training_jsonl"},
                       root, tmp_path, graph)  # fmt: skip
    assert err.value.finding.code == "E-ARTIFACT-TYPE"
    assert "is a nemo_rl_megatron_checkpoint, the port takes a training_jsonl" in str(err.value)
    # a subtype of the port's type is taken, like a path whose content passes
    out, [hit] = resolve_inputs({"ckpt": "ModelArtifact-rlvr"}, {"ckpt": "nemo_rl_checkpoint"},
                                root, tmp_path, graph)  # fmt: skip
    assert out == {"ckpt": str(ckpt)} and hit.version == "v0"


def test_an_existing_path_is_never_read_as_a_name(tmp_path):
    root = tmp_path / "runs"
    _register(root, _data(tmp_path / "a", "{}\n"))
    _data(tmp_path / "DataBlendsArtifact-rl", "{}\n")  # a folder that happens to be called so
    out, hits = resolve_inputs({"train": "DataBlendsArtifact-rl"}, {"train": "training_jsonl"},
                               root, tmp_path)  # fmt: skip
    assert (out, hits) == ({"train": "DataBlendsArtifact-rl"}, [])


def _register_in_child(args: tuple[str, str]) -> str:
    root, folder = args
    return str(_register(Path(root), _data(Path(folder), f'{{"f": "{folder}"}}\n'))[0])


def test_runs_registering_at_once_lose_no_version(tmp_path):
    root = tmp_path / "runs"
    jobs = [(str(root), str(tmp_path / f"d{i}")) for i in range(6)]
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        names = pool.map(_register_in_child, jobs)
    versions = load(root).artifacts["DataBlendsArtifact-rl"].versions
    assert sorted(v.version for v in versions) == list(range(6))
    assert sorted(names) == [f"DataBlendsArtifact-rl:v{i}" for i in range(6)]


@pytest.mark.slow  # two rl_prep runs and a dry run of rlvr
def test_input_name_latest_binds_the_newest_rl_prep_output_and_lineage_shows_it(
    tmp_path, steps_in_process
):
    runs = tmp_path / "runs"
    env = clean_env(tmp_path, STEPS_OUTPUT=str(tmp_path / "out"), STEPS_RUNS_DIR=str(runs))

    def steps(*argv: str):
        return steps_in_process(*argv, cwd=tmp_path, env=env)

    def lineage(what: str):
        return steps("lineage", what, "--json")

    first = steps("run", "data_prep/rl_prep", "-c", "tiny")
    assert first.returncode == 0, first.stderr
    newer = tmp_path / "newer"
    second = steps("run", "data_prep/rl_prep", "-c", "tiny", f"output_dir={newer}", "sample=20")
    assert second.returncode == 0, second.stderr
    [reg] = json.loads(second.stdout)["artifacts"]["registered"]
    assert (reg["artifact"], reg["path"], reg["new"]) == (
        "DataBlendsArtifact-rl:v1",
        str(newer),
        True,
    )

    checkout = fake_checkout(tmp_path / "nemo-rl")
    gym_root(checkout / "3rdparty" / "Gym-workspace")
    dry = steps(
        "run", "rl/nemo_rl/rlvr", "-c", "nemo_gym_tiny", "--input",
        "train=DataBlendsArtifact-rl:latest", "--nemo-rl", str(checkout), "--dry-run", "--json",
    )  # fmt: skip
    assert dry.returncode == 0, dry.stdout + dry.stderr
    train = json.loads(dry.stdout)["config"]["data"]["train"]
    paths = [t["data_path"] for t in train] if isinstance(train, list) else [train["data_path"]]
    assert paths and all(p.startswith(f"{newer}/train/") for p in paths)

    shown = lineage("DataBlendsArtifact-rl:latest")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)["lineage"]
    made = doc["produced_by"]
    assert (doc["artifact"], doc["aliases"], doc["versions"]) == (
        "DataBlendsArtifact-rl:v1", ["latest"], ["v0", "v1"])  # fmt: skip
    assert made["step"] == "data_prep/rl_prep" and made["config_digest"].startswith("sha256:")
    run_dir = Path(made["run_dir"])
    digest = hashlib.sha256((run_dir / "config.yaml").read_bytes()).hexdigest()
    assert made["config_digest"] == f"sha256:{digest}"
    [blend] = doc["inputs"]
    assert blend["port"] == "blend" and blend["digest"].startswith("xxh3_128:")

    of_run = lineage(str(run_dir))
    produced = json.loads(of_run.stdout)["lineage"]["produced"]
    assert [p["artifact"] for p in produced] == ["DataBlendsArtifact-rl:v1"]

    missing = lineage("DataBlendArtifact-rl")
    assert missing.returncode == 2
    [f] = json.loads(missing.stdout)["findings"]
    assert f["code"] == "E-ARTIFACT-UNKNOWN" and "did you mean DataBlendsArtifact-rl?" in f["fix"]


def test_input_name_of_the_wrong_type_stops_the_run_before_anything_is_written(
    tmp_path, steps_in_process
):
    runs = tmp_path / "runs"
    _register(runs, _data(tmp_path / "ckpt", "{}\n"), "ModelArtifact-rlvr", "nemo_rl_checkpoint")
    env = clean_env(tmp_path, STEPS_RUNS_DIR=str(runs))
    proc = steps_in_process("run", "rl/nemo_rl/rlvr", "-c", "nemo_gym_tiny", "--input",
                            "train=ModelArtifact-rlvr:latest", "--dry-run", "--json",
                            cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [f] = json.loads(proc.stdout)["findings"]
    assert f["code"] == "E-ARTIFACT-TYPE"
    assert not (runs / "rl").exists()


def test_a_damaged_registry_is_named_and_leaves_plain_paths_alone(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    registry_path(root).write_text("{not json")
    ports = {"train": "training_jsonl"}
    assert resolve_inputs({"train": "rows.jsonl"}, ports, root, tmp_path)[0] == {
        "train": "rows.jsonl"
    }
    with pytest.raises(StepsError) as err:
        resolve_inputs({"train": "DataBlendsArtifact-rl:latest"}, ports, root, tmp_path)
    assert err.value.finding.code == "E-ARTIFACT-REGISTRY"
    assert err.value.finding.path == str(registry_path(root))
