"""A dry run says what the submit will say: each refusal of a cluster launch is reported the same
by `run --dry-run` and by `run` itself, and the refused submit writes nothing (no run dir here,
nothing under remote_dir, no job). The Ray head cases are in test_launch_ray.py (one head).

Ray's SDK is made missing for real: a venv that holds every package of this one but Ray.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from cluster_fixtures import PYTHON, dry_run_env, stand_in_checkout
from run_fixtures import REPO, steps_cli


@pytest.fixture(scope="module")
def python_without_ray(tmp_path_factory) -> Path:
    """A venv (no pip) whose site-packages links every package of this venv except Ray."""
    root = tmp_path_factory.mktemp("noray")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    theirs = Path(subprocess.check_output([python, "-c", code], text=True).strip())
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name != "ray" and not entry.name.startswith("ray-"):
            (theirs / entry.name).symlink_to(entry)
    assert subprocess.run([python, "-c", "import ray"], capture_output=True).returncode == 1
    return python


def _cli(python: Path, *argv: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    env = {**env, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [str(python), "-m", "steps", *argv], cwd=cwd, env=env, capture_output=True, text=True
    )


def both_ways(python: Path, work: Path, env: dict, *argv: str) -> list[subprocess.CompletedProcess]:
    """`run ... --dry-run` then `run ...`, from `work`; asserts the submit wrote nothing."""
    run = ["run", *argv]
    results = [
        _cli(python, *run, "--dry-run", cwd=work, env=env),
        _cli(python, *run, cwd=work, env=env),
    ]
    assert not (work / "runs").exists(), "a refused submit wrote a run dir"
    return results


def _lines(proc: subprocess.CompletedProcess, code: str) -> list[str]:
    return [line for line in proc.stderr.splitlines() if f" {code} " in f" {line}"]


def test_without_rays_sdk_the_dry_run_and_the_submit_both_refuse(tmp_path, python_without_ray):
    stand_in_checkout(tmp_path / "RL")
    work = tmp_path / "work"
    work.mkdir()
    (work / "env.toml").write_text(
        f'[ray]\nexecutor = "ray"\naddress = "http://127.0.0.1:9"\nnemo_rl_dir = "{tmp_path}/RL"\n'
        f'launcher = "{PYTHON}"\nremote_dir = "{tmp_path}/shared"\n'
    )
    (tmp_path / "shared").mkdir()
    env = dry_run_env(tmp_path, STEPS_OUTPUT=str(tmp_path / "shared" / "out"))
    dry, submit = both_ways(
        python_without_ray, work, env, "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "ray"
    )
    assert dry.returncode == submit.returncode == 2, dry.stderr + submit.stderr
    missing = _lines(dry, "E-RAY-MISSING")
    assert missing == _lines(submit, "E-RAY-MISSING")
    # Ray is named among what is missing (aiohttp and the rest may be absent too).
    named = re.search(r"SDK is not installed here \(missing: ([^)]*)\)", missing[0])
    assert len(missing) == 1 and named and "ray" in named.group(1).split(", "), missing
    assert "Traceback" not in dry.stderr + submit.stderr
    assert list((tmp_path / "shared").iterdir()) == []


def test_a_slurm_remote_dir_that_cannot_be_created_is_refused_both_ways(
    tmp_path, monkeypatch, capsys
):
    stand_in_checkout(tmp_path / "RL")
    work = tmp_path / "work"
    work.mkdir()
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where remote_dir's parent should be\n")
    (work / "env.toml").write_text(
        f'[lab]\nexecutor = "slurm"\ncontainer_image = "img"\nmounts = ["{tmp_path}:{tmp_path}", '
        f'"{REPO}:{REPO}"]\nremote_dir = "{blocker}/runs"\nnemo_rl_dir = "{tmp_path}/RL"\n'
    )
    env = dry_run_env(tmp_path, STEPS_OUTPUT=str(tmp_path / "out"))
    argv = ["run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab", "--json"]
    dry = steps_cli(monkeypatch, capsys, *argv, "--dry-run", cwd=work, env=env)
    submit = steps_cli(monkeypatch, capsys, *argv, cwd=work, env=env)
    assert not (work / "runs").exists(), "a refused submit wrote a run dir"
    assert dry.returncode == submit.returncode == 1, dry.stderr + submit.stderr
    found = [
        {f["code"]: f for f in json.loads(r.stdout)["findings"]}["E-REMOTE-STAGE"]
        for r in (dry, submit)
    ]
    assert found[0] == found[1]
    assert f"{blocker} is not a writable folder on this machine" in found[0]["message"]
    assert found[0]["path"] == str(work / "env.toml") and found[0]["line"] == 5
    assert "sbatch ran" not in dry.stderr + submit.stderr
    assert blocker.read_text().startswith("a file")
