"""`python -m steps run` execs the upstream script with exactly the config it validated."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from run_fixtures import (
    RECORD_VAR,
    REPO,
    clean_env,
    dpo_step,
    fake_checkout,
    fake_uv,
    only_run_dir,
    steps_run,
)

from runners.config.env_pins import pin_env
from runners.nemo_rl import checkout as nemo_rl

pytestmark = pytest.mark.slow  # each test execs the runner into a stand-in script


def _setup(tmp_path: Path, uv_lock: bool = False):
    catalog = tmp_path / "catalog"
    step = dpo_step(catalog)
    checkout = fake_checkout(tmp_path / "nemo-rl", uv_lock=uv_lock)
    record = tmp_path / "record.json"
    work = tmp_path / "work"
    work.mkdir()
    env = clean_env(tmp_path, **{RECORD_VAR: str(record)})
    return catalog, step, checkout, record, work, env


def test_dpo_script_gets_the_compiled_config_and_only_config_argv(tmp_path):
    catalog, step, checkout, record, work, env = _setup(tmp_path)
    proc = steps_run(
        "rl/fake_dpo",
        "--catalog",
        str(catalog),
        "--nemo-rl",
        str(checkout),
        "--runs-dir",
        str(tmp_path / "runs"),
        "dpo.max_num_steps=7",
        cwd=work,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(record.read_text())
    run_dir = only_run_dir(tmp_path / "runs", "rl/fake_dpo")
    config_yaml = run_dir / "config.yaml"
    # The documented argv: current Python (no uv.lock), the script, --config, nothing else.
    assert rec["orig_argv"] == [sys.executable, "examples/run_dpo.py", "--config", str(config_yaml)]
    assert rec["overrides"] == []
    assert rec["cwd"] == str(checkout.resolve())
    assert rec["pythonpath"].split(":")[0] == str(checkout.resolve())
    # Exactly the compiled config: the same bytes as the run dir, interpolations kept.
    assert rec["config_text"] == config_yaml.read_text()
    cfg = rec["config"]
    assert cfg["dpo"]["max_num_steps"] == 7
    assert cfg["policy"]["tokenizer"]["name"] == "${policy.model_name}"
    assert cfg["dpo"]["val_global_batch_size"] == "${mul:${policy.train_global_batch_size},2}"
    # Bound paths are absolute: config-file paths from the -c file's folder, outputs from the
    # NeMo-RL checkout (where NeMo-RL would have put them).
    assert cfg["data"]["train"]["data_path"] == str(step / "data" / "train.jsonl")
    assert cfg["data"]["validation"]["data_path"] == str(step / "data" / "val.jsonl")
    assert cfg["checkpointing"]["checkpoint_dir"] == str(checkout.resolve() / "results/fake_dpo")
    assert cfg["policy"]["model_name"] == "Qwen/Qwen3-0.6B"  # a hub id stays as it is
    # The plain env interpolation is pinned to the value this environment gave it (run.json
    # says which), so the job writes where preflight checked.
    assert cfg["logger"]["log_dir"] == f"{env['STEPS_OUTPUT']}/dpo/logs"
    used = json.loads((run_dir / "run.json").read_text())["config_env"]
    assert used == {"STEPS_OUTPUT": {"value": env["STEPS_OUTPUT"], "source": "environment"}}
    # Apart from that and the bound paths, the config is what compile_config produces with the
    # version overlays of the NeMo-RL found (its version is unknown here: the pin's overlays).
    tiny = step / "config" / "tiny.yaml"
    compiled = nemo_rl.compile_for(nemo_rl.Target(None, None), "dpo", tiny, ["dpo.max_num_steps=7"])
    pin_env(compiled.config, env)
    expected = yaml.safe_load(compiled.to_yaml())
    for key in ("train", "validation"):
        expected["data"][key]["data_path"] = cfg["data"][key]["data_path"]
    expected["checkpointing"]["checkpoint_dir"] = cfg["checkpointing"]["checkpoint_dir"]
    assert cfg == expected


def test_uv_run_is_used_when_the_checkout_has_uv_lock_and_uv_is_on_path(tmp_path):
    catalog, _, checkout, record, work, env = _setup(tmp_path, uv_lock=True)
    uv_record = tmp_path / "uv.json"
    fake_uv(tmp_path / "bin", uv_record)
    env["PATH"] = f"{tmp_path / 'bin'}:{env['PATH']}"
    proc = steps_run(
        "rl/fake_dpo",
        "--catalog",
        str(catalog),
        "--nemo-rl",
        str(checkout),
        "--runs-dir",
        str(tmp_path / "runs"),
        cwd=work,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    config_yaml = only_run_dir(tmp_path / "runs", "rl/fake_dpo") / "config.yaml"
    uv = json.loads(uv_record.read_text())
    assert uv["argv"][1:] == ["run", "python", "examples/run_dpo.py", "--config", str(config_yaml)]
    assert uv["cwd"] == str(checkout.resolve())
    assert json.loads(record.read_text())["config_text"] == config_yaml.read_text()


def test_without_uv_on_path_a_uv_lock_still_runs_with_this_python(tmp_path):
    catalog, _, checkout, record, work, env = _setup(tmp_path, uv_lock=True)
    # no uv here: not this venv's bin folder, which holds the test extra's uv
    env["PATH"] = os.pathsep.join(d for d in ("/usr/bin", "/bin") if not Path(d, "uv").exists())
    proc = steps_run(
        "rl/fake_dpo",
        "--catalog",
        str(catalog),
        "--nemo-rl",
        str(checkout),
        "--runs-dir",
        str(tmp_path / "runs"),
        cwd=work,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(record.read_text())["orig_argv"][:2] == [
        sys.executable,
        "examples/run_dpo.py",
    ]


def test_nemo_rl_home_locates_the_checkout(tmp_path):
    catalog, _, checkout, record, work, env = _setup(tmp_path)
    env["NEMO_RL_HOME"] = str(checkout)
    proc = steps_run(
        "rl/fake_dpo",
        "--catalog",
        str(catalog),
        "--runs-dir",
        str(tmp_path / "runs"),
        cwd=work,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(record.read_text())["cwd"] == str(checkout.resolve())


def test_gym_config_runs_the_gym_script_with_agent_ref_filled_in_the_run_dir(tmp_path):
    checkout = fake_checkout(tmp_path / "nemo-rl")
    record = tmp_path / "record.json"
    env = clean_env(tmp_path, **{RECORD_VAR: str(record)})
    rows = tmp_path / "rows.jsonl"
    ref = {"type": "responses_api_agents", "name": "math_with_judge_simple_agent"}
    rows.write_text(
        json.dumps(
            {
                "responses_create_params": {"input": [{"role": "user", "content": "1+1"}]},
                "question": "1+1",
                "expected_answer": "2",
            }
        )
        + "\n"
        + json.dumps(
            {
                "responses_create_params": {"input": [{"role": "user", "content": "2+2"}]},
                "agent_ref": {"type": "responses_api_agents", "name": "other"},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    with rows.open("a", encoding="utf-8") as more:  # one step's 4 prompts (E-ZERO-STEPS)
        first = rows.read_text(encoding="utf-8").splitlines()[0]
        more.write(f"{first}\n{first}\n")
    proc = steps_run(
        "rl/nemo_rl/rlvr",
        "-c",
        "nemo_gym_tiny",
        "--nemo-rl",
        str(checkout),
        "--runs-dir",
        str(tmp_path / "runs"),
        f"data.train.data_path={rows}",
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rec = json.loads(record.read_text())
    assert rec["argv"][0] == "examples/nemo_gym/run_grpo_nemo_gym.py"
    run_dir = only_run_dir(tmp_path / "runs", "rl/nemo_rl/rlvr")
    train = rec["config"]["data"]["train"]["data_path"]
    assert train == str(run_dir / "inputs" / "train.jsonl")
    got = [json.loads(line) for line in Path(train).read_text().splitlines()]
    assert got[0]["agent_ref"] == ref and got[0]["expected_answer"] == "2"
    assert got[1]["agent_ref"]["name"] == "other"  # an explicit agent_ref is kept
    # Validation rows already carry agent_ref: bound in place, no copy.
    val = rec["config"]["data"]["validation"]["data_path"]
    assert val == str(REPO / "steps/rl/nemo_rl/rlvr/data/tiny_gym_val.jsonl")


def test_step_py_runs_the_same_runner_without_the_step_id(tmp_path):
    _, step, checkout, record, work, env = _setup(tmp_path)
    (step / "step.py").write_text(
        "import sys\nfrom pathlib import Path\n"
        "from steps.cli.run_cmd import main_for_step as main\n"
        "sys.exit(main(Path(__file__).resolve().parent, sys.argv[1:]))\n",
        encoding="utf-8",
    )
    import os
    import subprocess

    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [
            sys.executable,
            str(step / "step.py"),
            "dpo.max_num_steps=5",
            "--nemo-rl",
            str(checkout),
            "--runs-dir",
            str(tmp_path / "runs"),
        ],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(record.read_text())["config"]["dpo"]["max_num_steps"] == 5
    assert os.path.isdir(tmp_path / "runs" / "rl" / "fake_dpo")
