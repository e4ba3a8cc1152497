"""On a cluster the upstream judge runs first, as a CPU job in the user's own image (issue 38).

Real components: the lab's one-node Slurm (afterok, --kill-on-invalid-dep) and a real local Ray
head; the "image" is the pyxis stand-in (the job's python3 has nothing of ours, the container
step gets the image's packages) plus a NeMo-RL of its own: tests/upstream_standin's `nemo_rl` in
tmp_path, whose DPO section bounds `max_num_steps` as a newer release might (a pydantic
ValidationError from MasterConfig, as the real one raises). steps compiled against the stand-in
checkout, which has no such bound: only the image's NeMo-RL can refuse the config.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cluster_fixtures import PYTHON, ray_head, slurm, stand_in_checkout, wait_for  # noqa: F401
from run_fixtures import REPO, clean_env, steps_cli
from test_launch_slurm import job_env, write_env_toml

STANDIN = Path(__file__).resolve().parent / "upstream_standin" / "nemo_rl"
BOUNDED = "    max_num_steps: int\n"
REFUSED = ("dpo.max_num_steps=500",)  # the image's NeMo-RL takes at most 100


def image_nemo_rl(root: Path) -> Path:
    """The image's NeMo-RL: the stand-in, with a bound the compiled-against checkout lacks."""
    site = root / "image"
    shutil.copytree(STANDIN, site / "nemo_rl")
    dpo = site / "nemo_rl" / "algorithms" / "dpo.py"
    text = dpo.read_text(encoding="utf-8")
    assert BOUNDED in text
    bounded = "    max_num_steps: Annotated[int, Field(ge=1, le=100)]\n"
    head = "from typing import Annotated\n\nfrom pydantic import Field\n"
    dpo.write_text(head + text.replace(BOUNDED, bounded), encoding="utf-8")
    return site


@pytest.fixture
def judged(tmp_path, slurm, monkeypatch, capsys):  # noqa: F811
    """The lab Slurm profile with a container whose launcher imports the image's NeMo-RL."""
    stand_in_checkout(tmp_path / "RL")
    work = tmp_path / "work"
    work.mkdir()
    write_env_toml(work, tmp_path, PYTHONPATH=str(image_nemo_rl(tmp_path)))
    env = clean_env(tmp_path, SLURM_CONF=slurm["SLURM_CONF"], WANDB_API_KEY="w" * 40,
                    STEPS_OUTPUT=str(tmp_path / "out"), STEPS_POLL_SECONDS="0.3")  # fmt: skip
    job_env(env, tmp_path)
    env.pop("STEPS_UPSTREAM_JUDGE_SECONDS")  # the judge is what is tested here

    def cli(*argv: str):
        return steps_cli(monkeypatch, capsys, *argv, cwd=work, env=env)

    return tmp_path, work, cli


def _run_json(work: Path) -> dict:
    run_dir = next((work / "runs" / "rl" / "nemo_rl" / "dpo").iterdir())
    return json.loads((run_dir / "run.json").read_text())


def test_a_config_the_images_nemo_rl_refuses_stops_before_the_gpu_job(judged):
    root, _work, cli = judged
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", *REFUSED, "--run", "lab")
    assert res.returncode == 1, res.stdout + res.stderr  # the dry-run rules had nothing to say
    assert "ended: CANCELLED" in res.stderr and "the GPU job never started" in res.stderr
    assert "E-UPSTREAM-CONFIG" in res.stderr  # the attached run says why
    status = json.loads(cli("status", "last", "--json").stdout)
    judge = status["upstream_judge"]
    assert judge["state"] == "FAILED" and judge["exit_code"] == 1
    assert int(judge["job_id"]) < int(status["job"]["job_id"])
    [found] = [f for f in judge["findings"] if f["severity"] == "error"]
    assert found["code"] == "E-UPSTREAM-CONFIG" and found["key"] == "dpo.max_num_steps"
    assert "less than or equal to 100" in found["message"]
    assert found["path"].endswith("/config.yaml") and found["line"]
    assert not (root / "record.json").exists()  # the GPU job's script never ran
    text = cli("status", "last").stdout
    assert "the GPU job never started" in text and "E-UPSTREAM-CONFIG" in text
    why = cli("diagnose", "last")
    assert "failure: upstream-judge" in why.stdout and "dpo.max_num_steps" in why.stdout
    log = cli("logs", "last")  # the judge's log: the GPU job has none
    assert "the GPU job never started" in log.stderr and "E-UPSTREAM-CONFIG" in log.stdout


def test_a_config_the_image_accepts_runs_the_gpu_job_after_the_judge(judged):
    root, work, cli = judged
    res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--run", "lab")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "driver done" in res.stdout
    said = [t for t in res.stderr.splitlines() if t.startswith("upstream judge: slurm job ")]
    assert said and "runs first; job " in said[0] and said[0].endswith(".out")
    assert json.loads((root / "record.json").read_text())["argv"][0] == "examples/run_dpo.py"
    status = json.loads(cli("status", "last", "--json").stdout)
    judge = status["upstream_judge"]
    assert judge["state"] == "COMPLETED" and judge["findings"] == []
    assert int(judge["job_id"]) < int(status["job"]["job_id"])
    assert _run_json(work)["judge"]["report"] == {"ok": True, "findings": []}  # read once


def test_the_dry_run_shows_the_judge_job_and_no_upstream_judge_submits_the_gpu_job_alone(judged):
    _root, work, cli = judged
    dry = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    at = lines.index("--- upstream judge first: a CPU job in nvcr.io/nvidia/nemo-rl:v0.7.0 ---")
    sbatch = lines[at + 1]
    assert "--job-name=steps-dpo-" in sbatch and "-judge " in sbatch
    assert "--time=00:05:00" in sbatch and "--gres" not in sbatch
    assert "upstream-judge" in lines[at + 2] and f"--launcher {PYTHON}" in lines[at + 2]
    assert lines[at + 3].startswith("then: the GPU job's sbatch gets --dependency=afterok:")
    sent = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab")
    assert sent.returncode == 0, sent.stderr
    stop = cli("cancel", "last")  # the GPU job, and the judge it waits on
    assert "(the upstream judge)" in stop.stdout, stop.stdout + stop.stderr
    shutil.rmtree(work / "runs")
    skip = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", *REFUSED, "--batch", "lab",
               "--no-upstream-judge")  # fmt: skip
    assert skip.returncode == 0, skip.stderr
    assert "judge" not in _run_json(work)
    wait_for(lambda: cli("status", "last", "--json").stdout.count('"COMPLETED"'), timeout=90)


def test_on_ray_a_cpu_job_judges_first_and_a_refusal_submits_no_gpu_job(
    tmp_path,
    ray_head,  # noqa: F811
    monkeypatch,
    capsys,
):
    stand_in_checkout(tmp_path / "RL")
    work = tmp_path / "work"
    work.mkdir()
    site = image_nemo_rl(tmp_path)
    inputs = []  # the data where the cluster sees it: under remote_dir
    for port, name in (("train", "tiny_train.jsonl"), ("validation", "tiny_val.jsonl")):
        (tmp_path / "shared" / "data").mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "steps" / "rl" / "nemo_rl" / "dpo" / "data" / name,
                    tmp_path / "shared" / "data" / name)  # fmt: skip
        inputs += ["--input", f"{port}={tmp_path}/shared/data/{name}"]
    (work / "env.toml").write_text(
        f'[ray]\nexecutor = "ray"\naddress = "{ray_head}"\nnemo_rl_dir = "{tmp_path}/RL"\n'
        f'launcher = "{PYTHON}"\nentrypoint_num_cpus = 0\nremote_dir = "{tmp_path}/shared"\n'
        f'env = {{ PYTHONPATH = "{site}" }}\n',
        encoding="utf-8",
    )
    env = clean_env(tmp_path, STEPS_OUTPUT=str(tmp_path / "shared" / "out"))

    def cli(*argv: str):
        return steps_cli(monkeypatch, capsys, *argv, cwd=work, env=env)

    ok = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", *inputs, "--batch", "ray")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    record = _run_json(work)  # the judge had passed when the GPU job was submitted
    assert record["judge"]["state"] == "SUCCEEDED" and record["judge"]["report"]["ok"] is True
    assert record["job"]["job_id"] == record["judge"]["job_id"].removesuffix("-judge")
    shutil.rmtree(work / "runs")
    refused = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", *inputs, *REFUSED, "--batch", "ray")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "E-UPSTREAM-JOB" in refused.stderr and "dpo.max_num_steps" in refused.stderr
    record = _run_json(work)
    assert record["job"]["job_id"].endswith("-judge") and record["job"]["state"] == "FAILED"
