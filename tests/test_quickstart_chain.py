"""The README's quickstart chain passes its own next step against a REAL NeMo-RL + Gym tree.

rl_prep -c tiny -> validate -> rlvr -c nemo_gym_tiny --dry-run: the prepared rows route to
agents the tiny Gym config loads, so the GRPO dry run has nothing to say about the data. The tree
is extracted (`git archive`, never imported) from git mirrors of NeMo-RL at the pin and of Gym at
the commit the pin's submodule names; upstream's files stay outside this repo, so the test skips
when the mirrors are not on this machine ($STEPS_NEMO_RL_GIT, $STEPS_NEMO_GYM_GIT).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from run_fixtures import REPO, clean_env

from catalog.upstream import GYM_SUBDIR, NEMO_RL_COMMIT

MIRRORS = REPO.parent / ".mirror"
RL_GIT = Path(os.environ.get("STEPS_NEMO_RL_GIT", MIRRORS / "NVIDIA-NeMo+RL" / "repo"))
GYM_GIT = Path(os.environ.get("STEPS_NEMO_GYM_GIT", MIRRORS / "NVIDIA-NeMo+Gym" / "repo"))
# Findings about the Python that would start NeMo-RL here (no torch/vllm in the test venv) and
# its GPUs (none on a CPU test machine), not about the data or the config.
INTERPRETER = ("E-LAUNCHER", "E-PACKAGE", "W-LOCAL-GPUS")


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True).stdout


def _extract(repo: Path, commit: str, dest: Path, *paths: str) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    archive = _git(repo, "archive", "--format=tar", commit, *(["--", *paths] if paths else []))
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


@pytest.fixture(scope="module")
def real_checkout(tmp_path_factory) -> Path:
    """NeMo-RL at the pin with its Gym submodule filled (Gym's sources and configs only)."""
    missing = [str(p) for p in (RL_GIT, GYM_GIT) if not (p / "HEAD").is_file()]
    if missing:
        pytest.skip(f"needs git mirrors of NeMo-RL and Gym (not found: {', '.join(missing)})")
    root = tmp_path_factory.mktemp("real") / "RL"
    _extract(RL_GIT, NEMO_RL_COMMIT, root)
    gym_commit = _git(RL_GIT, "rev-parse", f"{NEMO_RL_COMMIT}:{GYM_SUBDIR}").decode().strip()
    code = (":(glob)**/*.py", ":(glob)**/*.yaml", ":(glob)*.toml")
    _extract(GYM_GIT, gym_commit, root / GYM_SUBDIR, *code)
    return root


@pytest.mark.slow
def test_readme_quickstart_chain_is_clean_against_a_real_nemo_rl_and_gym(
    real_checkout, tmp_path, steps_in_process
):
    env = clean_env(tmp_path, STEPS_OUTPUT=str(tmp_path / "out"))
    prep = steps_in_process("run", "data_prep/rl_prep", "-c", "tiny", cwd=tmp_path, env=env)
    assert prep.returncode == 0, prep.stderr
    prepared = tmp_path / "out" / "rl_prep" / "tiny"
    validate = steps_in_process("validate", "nemo_gym_jsonl", str(prepared), cwd=tmp_path, env=env)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    dry = steps_in_process(
        "run", "rl/nemo_rl/rlvr", "-c", "nemo_gym_tiny", "--input", f"train={prepared}",
        "--nemo-rl", str(real_checkout), "--dry-run", "--json",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    plan = json.loads(dry.stdout)
    about_data = [f for f in plan["findings"] if not f["code"].startswith(INTERPRETER)]
    assert about_data == [], about_data
    assert plan["nemo_rl_version"]
