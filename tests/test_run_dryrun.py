"""`run --dry-run` and `--json`: output, the run dir, exit codes, secrets, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from run_fixtures import clean_env, dpo_step, fake_checkout, only_run_dir, steps_cli, steps_run

WANDB = "wandb-secret-value-123"
HF = "hf_secret_value_456"


@pytest.fixture
def cli(monkeypatch, capsys):
    """`steps run ...` in-process (the exec tests below spawn a real process instead)."""

    def call(*argv: str, cwd: Path, env: dict[str, str]):
        return steps_cli(monkeypatch, capsys, "run", *argv, cwd=cwd, env=env)

    return call


@pytest.fixture
def setup(tmp_path):
    catalog = tmp_path / "catalog"
    step = dpo_step(catalog)
    checkout = fake_checkout(tmp_path / "nemo-rl")
    env = clean_env(tmp_path)
    base = [
        "rl/fake_dpo",
        "--catalog",
        str(catalog),
        "--nemo-rl",
        str(checkout),
        "--runs-dir",
        str(tmp_path / "runs"),
    ]
    return tmp_path, step, checkout, env, base


def test_json_prints_one_object_with_the_documented_keys(setup, cli):
    tmp_path, _step, checkout, env, base = setup
    proc = cli(*base, "--dry-run", "--keep", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {
        "step",
        "version",
        "ok",
        "config",
        "findings",
        "command",
        "cwd",
        "run_dir",
        "nemo_rl_version",
    }
    assert out["ok"] is True
    assert out["step"] == "rl/fake_dpo"
    assert [f for f in out["findings"] if f.get("severity", "error") == "error"] == []
    assert out["cwd"] == str(checkout.resolve())
    assert out["command"][1:] == [
        "examples/run_dpo.py",
        "--config",
        str(Path(out["run_dir"]) / "config.yaml"),
    ]
    assert out["config"]["dpo"]["val_global_batch_size"] == 16  # resolved: mul(8, 2)
    assert out["config"]["policy"]["tokenizer"]["name"] == "Qwen/Qwen3-0.6B"


def test_dry_run_writes_nothing_and_execs_nothing(setup, cli):
    tmp_path, _step, _checkout, env, base = setup
    env["FAKE_NEMO_RL_RECORD"] = str(tmp_path / "record.json")
    cli(*base, "--dry-run", cwd=tmp_path, env=env)  # warms the catalog cache (not a run output)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    proc = cli(*base, "--dry-run", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "run dir: not written (dry run; --keep writes" in proc.stdout
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert not (tmp_path / "runs").exists()
    assert "--- resolved config" not in proc.stdout  # only with --show-config


def test_dry_run_keep_writes_the_run_dir_it_would_hand_over(setup, cli):
    tmp_path, step, checkout, env, base = setup
    env["FAKE_NEMO_RL_RECORD"] = str(tmp_path / "record.json")
    proc = cli(
        *base, "--dry-run", "--keep", "policy.train_global_batch_size=4", cwd=tmp_path, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "record.json").exists()
    assert "--- findings ---" in proc.stdout and "argv: " in proc.stdout
    assert f"cwd: {checkout.resolve()}" in proc.stdout
    run_dir = only_run_dir(tmp_path / "runs", "rl/fake_dpo")
    assert sorted(p.name for p in run_dir.iterdir()) == ["config.yaml", "resolved.yaml", "run.json"]
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["dpo"]["val_global_batch_size"] == "${mul:${policy.train_global_batch_size},2}"
    assert (
        yaml.safe_load((run_dir / "resolved.yaml").read_text())["dpo"]["val_global_batch_size"] == 8
    )
    record = json.loads((run_dir / "run.json").read_text())
    assert record["step"] == "rl/fake_dpo" and record["version"] == "1.2.3"
    assert record["argv"][-1] == "policy.train_global_batch_size=4"
    assert record["cwd"] == str(tmp_path)
    assert record["config_sources"][-2:] == [
        str(step / "config/base.yaml"),
        str(step / "config/tiny.yaml"),
    ]
    assert {(a["name"], a["type"]) for a in record["inputs"]} == {
        ("train", "preference_jsonl"),
        ("validation", "preference_jsonl"),
        ("policy", "hf_checkpoint"),
    }
    assert "PATH" in record["env"]
    assert record["nemo_rl_dir"] == str(checkout.resolve())
    assert not [
        p for p in (tmp_path / "runs" / "rl" / "fake_dpo").iterdir() if p.name.startswith(".")
    ]


def test_secrets_never_reach_output_run_json_or_configs(setup, cli):
    tmp_path, step, _checkout, env, base = setup
    tiny = step / "config" / "tiny.yaml"
    tiny.write_text(tiny.read_text() + "logger:\n  wandb:\n    api_key: ${oc.env:WANDB_API_KEY}\n")
    env.update(WANDB_API_KEY=WANDB, HF_TOKEN=HF)
    extra = [f"++logger.hf_token={HF}", "++logger.wandb.password=literal-pass-789"]
    flag_sets = (["--dry-run", "--keep", "--show-config"], ["--dry-run", "--keep", "--json"])
    for flags in flag_sets:
        proc = cli(*base, *flags, *extra, cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        for secret in (WANDB, HF, "literal-pass-789"):
            assert secret not in proc.stdout + proc.stderr
    run_dirs = list((tmp_path / "runs" / "rl" / "fake_dpo").iterdir())
    assert len(run_dirs) == len(flag_sets)
    for run_dir in run_dirs:
        for name in ("config.yaml", "resolved.yaml", "run.json"):
            text = (run_dir / name).read_text()
            for secret in (WANDB, HF, "literal-pass-789"):
                assert secret not in text, name
        resolved = yaml.safe_load((run_dir / "resolved.yaml").read_text())
        assert resolved["logger"]["wandb"]["api_key"] == "***"
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
        assert config["logger"]["wandb"]["api_key"] == "${oc.env:WANDB_API_KEY}"
        assert config["logger"]["hf_token"] == "${oc.env:HF_TOKEN}"
        assert config["logger"]["wandb"]["password"].startswith("${oc.env:STEPS_SECRET_")
        record = json.loads((run_dir / "run.json").read_text())
        assert "HF_TOKEN" in record["env"] and "WANDB_API_KEY" in record["env"]


def test_a_literal_secret_reaches_nemo_rl_through_the_environment(setup):
    tmp_path, _step, _checkout, env, base = setup
    env["FAKE_NEMO_RL_RECORD"] = str(tmp_path / "record.json")
    proc = steps_run(*base, "++logger.wandb.api_key=literal-key-000", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads((tmp_path / "record.json").read_text())
    var = rec["config"]["logger"]["wandb"]["api_key"][len("${oc.env:") : -1]
    assert var in rec["env_names"]
    assert "literal-key-000" not in rec["config_text"]


def test_unresolved_value_fails_preflight_with_file_and_line(setup, cli):
    tmp_path, step, _, env, base = setup
    unset = step / "config" / "unset.yaml"
    unset.write_text("defaults: tiny.yaml\nlogger:\n  run_name: ???\n")
    proc = cli(*base, "-c", "unset", "--dry-run", cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert f"{unset}:3: E-CONFIG-UNRESOLVED logger.run_name" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_relative_data_path_stays_as_written_and_is_read_from_the_checkout(setup, cli):
    tmp_path, step, checkout, env, base = setup
    (checkout / "data").mkdir()
    (checkout / "data" / "t.jsonl").write_text((step / "data" / "train.jsonl").read_text())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "child.yaml").write_text(
        f"defaults: {step / 'config' / 'tiny.yaml'}\ndata:\n  train:\n    data_path: data/t.jsonl\n"
    )
    proc = cli(
        *base, "-c", str(elsewhere / "child.yaml"), "--dry-run", "--json", cwd=tmp_path, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)["config"]["data"]
    assert data["train"]["data_path"] == "data/t.jsonl"  # NeMo-RL opens it from its checkout
    assert data["validation"]["data_path"] == str(step / "data" / "val.jsonl")


def test_deleted_required_section_is_reported(setup, cli):
    tmp_path, _, _, env, base = setup
    proc = cli(*base, "--dry-run", "--json", "~cluster", cwd=tmp_path, env=env)
    assert proc.returncode == 1
    codes = [(f["code"], f.get("key")) for f in json.loads(proc.stdout)["findings"]]
    assert ("E-CONFIG-SECTION", "cluster") in codes


def test_missing_input_names_the_key_and_the_path(setup, cli):
    tmp_path, _, _, env, base = setup
    proc = cli(
        *base, "--dry-run", "--json", "--input", "train=nope/train.jsonl", cwd=tmp_path, env=env
    )
    assert proc.returncode == 1
    f = json.loads(proc.stdout)["findings"][0]
    assert f["code"] == "E-INPUT-MISSING" and f["key"] == "data.train.data_path"
    assert str(tmp_path / "nope" / "train.jsonl") in f["message"]


def test_preflight_errors_stop_the_launch_with_exit_1(setup, cli):
    tmp_path, _, _, env, base = setup
    env["FAKE_NEMO_RL_RECORD"] = str(tmp_path / "record.json")
    # in-process: a launch that went on would reach os.exec*, which fails the test (steps_cli)
    proc = cli(*base, "data.train.data_path=missing.jsonl", cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert "E-INPUT-MISSING" in proc.stderr
    assert not (tmp_path / "record.json").exists()


def test_nemo_rl_not_found_is_a_warning_in_a_dry_run_and_exit_2_at_launch(setup, cli):
    tmp_path, _, _, env, base = setup
    args = [a for a in base if a not in ("--nemo-rl",)]
    args.remove(str(tmp_path / "nemo-rl"))
    args += ["--nemo-rl", str(tmp_path / "nowhere")]
    proc = cli(*args, "--dry-run", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning: W-NEMO-RL-NOT-FOUND" in proc.stdout and "NEMO_RL_HOME" in proc.stdout
    proc = cli(*args, cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert "E-NEMO-RL-NOT-FOUND" in proc.stderr and "NEMO_RL_HOME" in proc.stderr
    assert "Traceback" not in proc.stderr


def _errors(tmp_path: Path, step: Path):
    cfg = step / "config"
    (cfg / "bad_yaml.yaml").write_text("defaults: base.yaml\ndpo:\n  max: [1, 2\n")
    (cfg / "orphan.yaml").write_text("defaults: ../nowhere/parent.yaml\n")
    (cfg / "loop_a.yaml").write_text("defaults: loop_b.yaml\n")
    (cfg / "loop_b.yaml").write_text("defaults: loop_a.yaml\n")
    return [
        (["-c", "bad_yaml"], "E-CONFIG-YAML", f"{cfg / 'bad_yaml.yaml'}:"),
        (["-c", "orphan"], "E-CONFIG-DEFAULTS", "nowhere/parent.yaml"),
        (["-c", "loop_a"], "E-CONFIG-CYCLE", "loop_b.yaml"),
        (["dpo.max_num_step=3"], "E-OVERRIDE-KEY", "did you mean dpo.max_num_steps"),
        (["dpo.max_num_steps=[1,"], "E-OVERRIDE-SYNTAX", "'dpo.max_num_steps=[1,'"),
        (["+dpo.max_num_steps=3"], "E-OVERRIDE-KEY", "already exists"),
        (["-c", "nosuch"], "E-CONFIG-NOT-FOUND", "has no config 'nosuch'"),
        (["--input", "trian=x.jsonl"], "E-INPUT-NAME", "use one of: train"),
    ]


def test_bad_input_is_a_clear_error_without_traceback(setup, cli):
    tmp_path, step, _, env, base = setup
    for extra, code, needle in _errors(tmp_path, step):
        proc = cli(*base, "--dry-run", *extra, cwd=tmp_path, env=env)
        out = proc.stdout + proc.stderr  # an override's finding is in the plan (stdout)
        assert proc.returncode == 2, (extra, out)
        assert code in out and needle in out, (extra, out)
        assert "Traceback" not in out


def test_unknown_step_suggests_the_nearest(tmp_path, cli):
    proc = cli("rl/nemo_rl/dop", "--dry-run", cwd=tmp_path, env=clean_env(tmp_path))
    assert proc.returncode == 2
    assert "E-STEP-UNKNOWN" in proc.stderr and "rl/nemo_rl/dpo" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_algorithm_name_suggests_the_steps_that_run_it(tmp_path, cli):
    proc = cli("grpo", "--dry-run", cwd=tmp_path, env=clean_env(tmp_path))
    assert proc.returncode == 2 and "E-STEP-UNKNOWN unknown step 'grpo'" in proc.stderr
    assert "did you mean rl/nemo_rl/rlhf or rl/nemo_rl/rlvr? (steps for grpo)" in proc.stderr


def test_a_bad_value_from_an_override_is_reported_at_the_override(setup, cli):
    tmp_path, _, _, env, base = setup
    proc = cli(*base, "--dry-run", "--json", "dpo.max_num_steps=abc", cwd=tmp_path, env=env)
    assert proc.returncode == 1
    found = {f.get("key"): f for f in json.loads(proc.stdout)["findings"]}
    assert found["dpo.max_num_steps"]["path"] == "override 'dpo.max_num_steps=abc'"
    assert found["dpo.max_num_steps"]["code"] == "E-SCHEMA-TYPE"


def test_an_override_typo_is_reported_first_with_every_other_finding(setup, cli):
    tmp_path, _, _, env, base = setup
    typo, bad = "dpo.sft_los_weight=0.1", "dpo.max_num_steps=abc"
    proc = cli(*base, "--dry-run", "--json", typo, bad, cwd=tmp_path, env=env)
    assert proc.returncode == 2  # usage: an override it could not take
    errors = [f for f in json.loads(proc.stdout)["findings"] if f["severity"] == "error"]
    assert (
        errors[0]["code"] == "E-OVERRIDE-KEY"
        and "did you mean dpo.sft_loss_weight" in (errors[0]["fix"])
    )
    assert any(f.get("key") == "dpo.max_num_steps" for f in errors[1:]), errors


def test_a_refused_override_leaves_no_run_dir(setup, cli):
    tmp_path, _, _, env, base = setup
    proc = cli(*base, "dpo.sft_los_weight=0.1", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "E-OVERRIDE-KEY" in proc.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("run.json"))
