"""An unreachable cluster host is one finding among the run's others, not the only one.

As the user met it off VPN: `run rlvr ... --batch my-cluster --dry-run` with rows the reward
server cannot score and a profile without nemo_rl_dir printed only E-REMOTE-HOST. The rest is
decidable here and is reported with it; what only the cluster can say (mounts, GPUs, the checkout
there) is not judged, and the exit code stays 2 (setup)."""

from __future__ import annotations

import json
from pathlib import Path

from run_fixtures import clean_env, steps_cli

AGENT = {"type": "responses_api_agents", "name": "math_with_judge_simple_agent"}
ROW = {"responses_create_params": {"input": [{"role": "user", "content": "2+2?"}]},
       "agent_ref": AGENT, "expected_answer": "4"}  # fmt: skip


def _profile(tmp_path: Path, nemo_rl_dir: bool) -> Path:
    env_toml = tmp_path / "env.toml"
    checkout = f'nemo_rl_dir = "{tmp_path}/RL"\n' if nemo_rl_dir else ""
    env_toml.write_text(
        f"""[my-cluster]
executor = "slurm"
tunnel = "ssh"
host = "127.0.0.1"
user = "alice"
ssh_options = ["-p", "1", "-o", "ConnectTimeout=3"]
account = "acct"
partition = "batch"
time = "04:00:00"
gpus_per_node = 8
container_image = "nvcr.io/nvidia/nemo-rl:v0.7.0"
mounts = ["/lustre:/lustre"]
remote_dir = "/lustre/steps-runs"
{checkout}"""
    )
    env_toml.chmod(0o600)
    return env_toml


def _dry_run(tmp_path, monkeypatch, capsys, *extra: str) -> tuple[int, dict]:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(ROW) + "\n")  # no `question`: math_with_judge cannot score it
    env = clean_env(tmp_path)
    proc = steps_cli(monkeypatch, capsys, "run", "rl/nemo_rl/rlvr", "-c", "nemo_gym",
                     "--input", f"train={rows}", "--input", f"validation={rows}",
                     "--batch", "my-cluster", "--dry-run", "--json", *extra,
                     cwd=tmp_path, env=env)  # fmt: skip
    return proc.returncode, json.loads(proc.stdout)


def test_an_unreachable_host_is_reported_with_every_other_finding(tmp_path, monkeypatch, capsys):
    env_toml = _profile(tmp_path, nemo_rl_dir=False)
    code, doc = _dry_run(tmp_path, monkeypatch, capsys, "--env-file", str(env_toml))
    codes = [f["code"] for f in doc["findings"]]
    assert code == 2 and doc["ok"] is False
    assert codes.count("E-REMOTE-HOST") == 1
    assert "E-GYM-TASK-FIELD" in codes  # the data, judged here
    assert "E-PROFILE" in codes  # the profile's missing nemo_rl_dir
    host = next(f for f in doc["findings"] if f["code"] == "E-REMOTE-HOST")
    assert "alice@127.0.0.1" in host["message"]


def test_what_only_the_cluster_can_say_is_not_guessed(tmp_path, monkeypatch, capsys):
    env_toml = _profile(tmp_path, nemo_rl_dir=True)
    code, doc = _dry_run(tmp_path, monkeypatch, capsys, "--env-file", str(env_toml))
    codes = {f["code"] for f in doc["findings"]}
    assert code == 2 and "E-REMOTE-HOST" in codes
    assert not {c for c in codes if c.startswith(("E-REMOTE-", "W-REMOTE-"))} - {"E-REMOTE-HOST"}
    assert "E-INPUT-MISSING" not in codes
