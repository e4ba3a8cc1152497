"""A user's config file for a shipped step, judged by preflight as `run --dry-run` judges it:
written to tmp_path over the step's tiny config, compiled for one NeMo-RL version."""

from __future__ import annotations

import json
from pathlib import Path

from preflight_fixtures import context_for
from run_fixtures import clean_env, fake_checkout, steps_cli

from catalog.errors import Finding
from runners.preflight import preflight

ROOT = Path(__file__).resolve().parents[1]
STEPS = ROOT / "steps" / "rl" / "nemo_rl"
GRPO_STATE = {
    "consumed_samples": 96,
    "current_step": 3,
    "current_epoch": 0,
    "total_steps": 3,
    "total_valid_tokens": 4096,
}
DPO_STATE = {"epoch": 0, "step": 3, "total_steps": 3, "consumed_samples": 12}


def user_config(tmp_path: Path, step: str, text: str, parent: str = "tiny.yaml") -> Path:
    """`cfg.yaml` in tmp_path: the step's `parent` config with the user's `text` over it."""
    config = tmp_path / "cfg.yaml"
    tmp_path.mkdir(parents=True, exist_ok=True)
    config.write_text(f"defaults: {STEPS / step / 'config' / parent}\n{text}", encoding="utf-8")
    return config


def judged(
    tmp_path: Path, step: str, text: str, version: str | None = None, parent: str = "tiny.yaml"
) -> list[Finding]:
    """Every finding preflight gives the user's config for NeMo-RL `version` (None: unknown)."""
    config = user_config(tmp_path, step, text, parent)
    return preflight(context_for(config, STEPS / step, version))


def on(findings: list[Finding], code: str) -> list[Finding]:
    return [f for f in findings if f.code == code]


def checkpoint(folder: Path, state: dict | None) -> Path:
    """`folder/` as NeMo-RL leaves a finished step_N: training_info.json (unless None)."""
    (folder / "policy" / "weights").mkdir(parents=True)
    if state is not None:
        (folder / "training_info.json").write_text(json.dumps(state), encoding="utf-8")
    return folder


def versioned_checkout(root: Path, version: str) -> Path:
    """A fake NeMo-RL checkout whose package_info.py says `version` (MAJOR.MINOR.PATCH)."""
    fake_checkout(root)
    major, minor, patch = (int(p) for p in version.split("."))
    info = root / "nemo_rl" / "package_info.py"
    info.parent.mkdir(parents=True, exist_ok=True)
    info.write_text(
        f"MAJOR = {major}\nMINOR = {minor}\nPATCH = {patch}\nPRE_RELEASE = ''\n", encoding="utf-8"
    )
    return root


def cli_dry_run(
    monkeypatch,
    capsys,
    tmp_path: Path,
    step: str,
    text: str,
    version: str,
    *extra: str,
    env: dict[str, str] | None = None,
) -> tuple[int, dict]:
    """`steps run rl/nemo_rl/STEP -c cfg.yaml --dry-run --json` against a checkout of
    `version`, in this process, with `env` added to a clean environment; the exit code and the
    JSON it printed."""
    config = user_config(tmp_path, step, text)
    checkout = versioned_checkout(tmp_path / "nemo-rl", version)
    argv = ["run", f"rl/nemo_rl/{step}", "-c", str(config), "--nemo-rl", str(checkout)]
    argv += ["--dry-run", "--json", "--runs-dir", str(tmp_path / "runs"), *extra]
    run_env = clean_env(tmp_path, **(env or {}))
    done = steps_cli(monkeypatch, capsys, *argv, cwd=tmp_path, env=run_env)
    return done.returncode, json.loads(done.stdout)
