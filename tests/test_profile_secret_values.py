"""Profile values that come from secrets are never printed (issue 39 case 4): `host` read from a
secret is an error at its line (it would be printed and put on ssh's command line), and any
secret's value that reaches a message is printed as `***`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from run_fixtures import REPO, clean_env

SECRET = "wb-" + "7f3a9c" * 6


def _steps(*argv: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "steps", *argv], capture_output=True, text=True, cwd=cwd,
        env={**env, "PYTHONPATH": str(REPO)}, timeout=120,
    )  # fmt: skip


def test_a_host_read_from_a_secret_is_an_error_at_its_line_and_never_printed(tmp_path):
    (tmp_path / "env.toml").write_text(
        '[lab]\nexecutor = "slurm"\nhost = "${oc.env:WANDB_API_KEY}"\nremote_dir = "/scratch/x"\n'
    )
    env = clean_env(tmp_path, WANDB_API_KEY=SECRET)
    proc = _steps("run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab", "--dry-run",
                  cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{tmp_path / 'env.toml'}:3: E-PROFILE" in proc.stderr
    assert "$WANDB_API_KEY is a secret" in proc.stderr
    assert SECRET not in proc.stdout + proc.stderr


def test_a_secrets_value_in_any_message_is_printed_as_stars(tmp_path):
    env = clean_env(tmp_path, HF_TOKEN=SECRET)
    proc = _steps("validate", "training_jsonl", str(tmp_path / SECRET / "rows.jsonl"),
                  cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 2 and "E-INPUT-NOT-FOUND" in proc.stderr, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr and "/***/rows.jsonl" in proc.stderr
