"""Inside the cluster judge's job (issue 38): `upstream-judge JOB_DIR --launcher CMD` asks the
image's own launcher and NeMo-RL about the run dir's config; exit 1 holds the GPU job back.

Real components, no scheduler: a run dir written by `run --dry-run --keep` (the fake DPO step and
checkout of the run tests), this Python as the image's launcher, and the image's NeMo-RL the
upstream stand-in (tests/upstream_standin) put on its PYTHONPATH, or none at all.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from run_fixtures import clean_env, dpo_step, fake_checkout, steps_cli

STANDIN = Path(__file__).resolve().parent / "upstream_standin" / "nemo_rl"


def _job_dir(tmp_path: Path, monkeypatch, capsys, *overrides: str) -> tuple[Path, Path, dict]:
    """A written run dir (as the job sees it), the checkout, and an environment."""
    dpo_step(tmp_path / "catalog")
    checkout = fake_checkout(tmp_path / "nemo-rl")
    env = clean_env(tmp_path)
    argv = ["run", "rl/fake_dpo", "--catalog", str(tmp_path / "catalog"), "--nemo-rl",
            str(checkout), "--runs-dir", str(tmp_path / "runs"), "--launcher", sys.executable,
            "--dry-run", "--keep", "--json", *overrides]  # fmt: skip
    dry = steps_cli(monkeypatch, capsys, *argv, cwd=tmp_path, env=env)
    assert dry.returncode == 0, dry.stdout
    return Path(json.loads(dry.stdout)["run_dir"]), checkout, env


def _judge(monkeypatch, capsys, job_dir: Path, checkout: Path, env: dict):
    argv = ("upstream-judge", str(job_dir), "--launcher", sys.executable)
    result = steps_cli(monkeypatch, capsys, *argv, cwd=checkout, env=env)
    mark = "STEPS-UPSTREAM-FINDINGS "
    [line] = [t for t in result.stdout.splitlines() if t.startswith(mark)]
    return result.returncode, json.loads(line[len(mark) :])


def test_a_value_the_images_nemo_rl_refuses_is_its_finding_at_the_line_and_exit_1(
    tmp_path, monkeypatch, capsys
):
    job_dir, checkout, env = _job_dir(tmp_path, monkeypatch, capsys)
    image = tmp_path / "image"
    shutil.copytree(STANDIN, image / "nemo_rl")
    config = job_dir / "config.yaml"  # the image's NeMo-RL sees what the GPU job would run
    config_lines = config.read_text().splitlines()
    resolved = job_dir / "resolved.yaml"
    resolved.write_text(resolved.read_text().replace("num_nodes: 1", "num_nodes: two"))
    code, report = _judge(monkeypatch, capsys, job_dir, checkout, {**env, "PYTHONPATH": str(image)})
    assert code == 1 and report["ok"] is False
    [found] = report["findings"]
    assert found["code"] == "E-UPSTREAM-CONFIG" and found["key"] == "cluster.num_nodes"
    assert found["path"] == str(config)
    assert config_lines[found["line"] - 1].strip().startswith("num_nodes:")


def test_an_image_whose_launcher_cannot_import_nemo_rl_stops_the_gpu_job(
    tmp_path, monkeypatch, capsys
):
    job_dir, checkout, env = _job_dir(tmp_path, monkeypatch, capsys)
    code, report = _judge(monkeypatch, capsys, job_dir, checkout, env)  # no nemo_rl there
    assert code == 1
    [found] = report["findings"]
    assert found["code"] == "E-UPSTREAM-IMPORT" and "nemo_rl.algorithms.dpo" in found["message"]


def test_a_config_the_image_accepts_exits_0_with_no_finding(tmp_path, monkeypatch, capsys):
    job_dir, checkout, env = _job_dir(tmp_path, monkeypatch, capsys)
    image = tmp_path / "image"
    shutil.copytree(STANDIN, image / "nemo_rl")
    code, report = _judge(monkeypatch, capsys, job_dir, checkout, {**env, "PYTHONPATH": str(image)})
    assert (code, report) == (0, {"ok": True, "findings": []})
