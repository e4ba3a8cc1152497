"""Profile values that come from secrets are never printed (issue 39 case 4): `host` read from a
secret is an error at its line (it would be printed and put on ssh's command line), and any
secret's value that reaches a message is printed as `***` (on file descriptors 1 and 2: the
CLI runs in-process under `capfd`)."""

from __future__ import annotations

from run_fixtures import clean_env

SECRET = "wb-" + "7f3a9c" * 6


def test_a_host_read_from_a_secret_is_an_error_at_its_line_and_never_printed(
    tmp_path, steps_in_process
):
    (tmp_path / "env.toml").write_text(
        '[lab]\nexecutor = "slurm"\nhost = "${oc.env:WANDB_API_KEY}"\nremote_dir = "/scratch/x"\n'
    )
    env = clean_env(tmp_path, WANDB_API_KEY=SECRET)
    proc = steps_in_process("run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab", "--dry-run",
                            cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{tmp_path / 'env.toml'}:3: E-PROFILE" in proc.stderr
    assert "$WANDB_API_KEY is a secret" in proc.stderr
    assert SECRET not in proc.stdout + proc.stderr


def test_a_secrets_value_in_any_message_is_printed_as_stars(tmp_path, steps_in_process):
    env = clean_env(tmp_path, HF_TOKEN=SECRET)
    proc = steps_in_process("validate", "training_jsonl", str(tmp_path / SECRET / "rows.jsonl"),
                            cwd=tmp_path, env=env)  # fmt: skip
    assert proc.returncode == 2 and "E-INPUT-NOT-FOUND" in proc.stderr, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr and "/***/rows.jsonl" in proc.stderr
