"""Artifact binding: where relative paths are read from, hub ids, rl_prep manifests, shards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from run_fixtures import DPO_MANIFEST, PAIR, clean_env, dpo_step, fake_checkout

from runners.run import plan_run, write_run_dir_for
from steps.cli.run_cmd import parse, request_of

GRPO_MANIFEST = (
    DPO_MANIFEST.replace('"rl/fake_dpo"', '"rl/fake_grpo"')
    .replace(
        'algorithm = "dpo"\nscript = "examples/run_dpo.py"',
        'algorithm = "grpo"\nscript = "examples/run_grpo.py"\n'
        'gym_script = "examples/nemo_gym/run_grpo_nemo_gym.py"',
    )
    .replace('"preference_jsonl"', '"training_jsonl"')
)


def _plan(tmp_path: Path, step_id: str, *argv: str, cwd: Path | None = None):
    checkout = fake_checkout(tmp_path / "nemo-rl")
    args = parse(
        [
            step_id,
            "--catalog",
            str(tmp_path / "catalog"),
            "--nemo-rl",
            str(checkout),
            "--runs-dir",
            str(tmp_path / "runs"),
            "--dry-run",
            *argv,
        ],
        with_step=True,
    )
    plan = plan_run(request_of(args), cwd=cwd or tmp_path, env=clean_env(tmp_path), argv=list(argv))
    write_run_dir_for(plan)
    return plan


def _rl_prep_output(root: Path, splits: dict[str, int], row: dict) -> Path:
    """An rl_prep output folder: shards per split and a manifest listing them."""
    manifest: dict = {"splits": {}}
    for split, n in splits.items():
        (root / split).mkdir(parents=True)
        shards = []
        for i in range(n):
            rel = f"{split}/shard_{i:06d}.jsonl"
            (root / rel).write_text(json.dumps({**row, "i": i}) + "\n", encoding="utf-8")
            shards.append({"path": rel, "rows": 1})
        manifest["splits"][split] = {"shards": shards}
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def _config(plan) -> dict:
    return yaml.safe_load((plan.run_dir / "config.yaml").read_text())


def test_override_and_input_paths_are_read_from_the_current_directory(tmp_path):
    dpo_step(tmp_path / "catalog")
    work = tmp_path / "work"
    (work / "d").mkdir(parents=True)
    (work / "d" / "t.jsonl").write_text((json.dumps(PAIR) + "\n") * 8)  # one batch
    (work / "d" / "v.jsonl").write_text(json.dumps(PAIR) + "\n")
    plan = _plan(
        tmp_path,
        "rl/fake_dpo",
        "data.train.data_path=d/t.jsonl",
        "--input",
        "validation=d/v.jsonl",
        cwd=work,
    )
    cfg = _config(plan)
    assert cfg["data"]["train"]["data_path"] == str(work / "d" / "t.jsonl")
    assert cfg["data"]["validation"]["data_path"] == str(work / "d" / "v.jsonl")
    assert plan.ok, plan.findings


def test_a_local_policy_folder_is_bound_as_a_path_and_a_hub_id_is_kept(tmp_path):
    dpo_step(tmp_path / "catalog")
    (tmp_path / "org" / "model").mkdir(parents=True)
    plan = _plan(tmp_path, "rl/fake_dpo", "--input", "policy=org/model")
    assert _config(plan)["policy"]["model_name"] == str(tmp_path / "org" / "model")
    plan = _plan(tmp_path, "rl/fake_dpo", "policy.model_name=meta-llama/Llama-3.2-1B")
    assert _config(plan)["policy"]["model_name"] == "meta-llama/Llama-3.2-1B"
    policy = next(a for a in plan_inputs(plan) if a.name == "policy")
    assert policy.is_path is False


def test_rl_prep_manifest_binds_train_and_val_and_concatenates_shards_for_dpo(tmp_path):
    dpo_step(tmp_path / "catalog")
    out = _rl_prep_output(tmp_path / "prep", {"train": 8, "val": 1}, PAIR)  # one global batch
    plan = _plan(tmp_path, "rl/fake_dpo", "-c", "base", "--input", f"train={out}")
    cfg = _config(plan)
    train = Path(cfg["data"]["train"]["data_path"])
    assert train == plan.run_dir / "inputs" / "train.jsonl"
    assert [json.loads(x)["i"] for x in train.read_text().splitlines()] == list(range(8))
    assert cfg["data"]["validation"]["data_path"] == str(out / "val" / "shard_000000.jsonl")
    assert plan.ok, plan.findings


def test_rl_prep_manifest_gives_grpo_one_dataset_entry_per_shard(tmp_path):
    step = dpo_step(tmp_path / "catalog")
    (step / "step.toml").write_text(GRPO_MANIFEST)
    row = {"problem": "1+1", "expected_answer": "2"}
    out = _rl_prep_output(tmp_path / "prep", {"train": 2, "val": 1}, row)
    plan = _plan(
        tmp_path, "rl/fake_grpo", "-c", "base", "--input", f"train={out / 'manifest.json'}"
    )
    train = _config(plan)["data"]["train"]
    assert [e["data_path"] for e in train] == [
        str(out / "train" / f"shard_{i:06d}.jsonl") for i in range(2)
    ]
    keys = sorted(a.value for a in plan_inputs(plan) if a.name == "train")
    assert keys == [str(out / "train" / f"shard_{i:06d}.jsonl") for i in range(2)]


def plan_inputs(plan):
    record = json.loads((plan.run_dir / "run.json").read_text())
    return [type("A", (), a) for a in record["inputs"]]


@pytest.mark.parametrize(
    ("out", "pinned", "source"),
    [("/data/out", "/data/out/c", "environment"), (None, "/tmp/o/c", "default")],
)
def test_plain_env_interpolations_are_pinned_into_config_yaml_and_recorded(
    tmp_path, monkeypatch, out, pinned, source
):
    # A job started elsewhere (another shell, a cluster node) must write where preflight
    # checked: config.yaml carries the value, run.json says where it came from.
    if out is None:
        monkeypatch.delenv("OUT", raising=False)
    else:
        monkeypatch.setenv("OUT", out)
    monkeypatch.setenv("HF_TOKEN", "hf_secretsecretsecret123")
    step = dpo_step(tmp_path / "catalog")
    tiny = step / "config" / "tiny.yaml"
    tiny.write_text(tiny.read_text() + "checkpointing:\n  checkpoint_dir: ${oc.env:OUT,/tmp/o}/c\n")
    plan = _plan(tmp_path, "rl/fake_dpo", "++checkpointing.hf_token=${oc.env:HF_TOKEN}")
    config = _config(plan)
    assert config["checkpointing"]["checkpoint_dir"] == pinned
    assert plan.resolved["checkpointing"]["checkpoint_dir"] == pinned
    record = json.loads((plan.run_dir / "run.json").read_text())
    assert record["config_env"]["OUT"] == {"value": out or "/tmp/o", "source": source}
    # A secret stays a reference, its value reaches no file.
    assert config["checkpointing"]["hf_token"] == "${oc.env:HF_TOKEN}"
    assert "HF_TOKEN" not in record["config_env"]
    for name in ("config.yaml", "run.json", "resolved.yaml"):
        assert "hf_secretsecretsecret123" not in (plan.run_dir / name).read_text()
