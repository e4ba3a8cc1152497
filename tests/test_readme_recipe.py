"""The README's "Bring your own data" block, run as written, trains at least one step.

As the user met it: the recipe's GRPO dry run passed with W-ZERO-STEPS (28 train rows, 64
prompts a step): NeMo-RL would have run and trained nothing. A run that trains 0 steps is now
E-ZERO-STEPS, so the block itself must pass its own dry run."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from run_fixtures import REPO, clean_env


def _block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Bring your own data") :]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def test_the_bring_your_own_data_recipe_passes_its_own_grpo_dry_run(tmp_path):
    script = _block().replace(".venv/bin/python", sys.executable)
    env = clean_env(tmp_path, HOME=str(tmp_path), STEPS_RUNS_DIR=str(tmp_path / "runs"))
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "ZERO-STEPS" not in out
    assert re.search(r"wrote (\d+) train", out)
    train = int(re.search(r"wrote (\d+) train", out).group(1))  # type: ignore[union-attr]
    assert train >= 16  # one step's prompts, as the recipe's override says
