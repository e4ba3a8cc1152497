"""A CLI child starts cheaply: each command imports what its path needs (issue 28 item 8).

The suite and users start `python -m steps ...` hundreds of times; what a path imports and never
uses is paid by every start. Each test runs the command as users do and reads the modules it
imported from `python -X importtime`'s report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Start-up budgets, in modules imported (deterministic, unlike seconds: bench/bench_cli.py times
# them): 2026-12-07 a tiny dry run imported 461 modules, `list` fewer. A new import fits; a new
# stack (torch, ray, wandb, datasets: hundreds of modules each) does not.
DRY_RUN_BUDGET = 480
HEAVY = ("torch", "ray", "wandb", "datasets", "nemo_rl", "transformers", "pyarrow")


def imported(args: list[str], cwd: Path, **env: str) -> tuple[int, set[str]]:
    """The exit code of `python -m steps ARGS` and every module it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "steps", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        timeout=120,
    )
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("import time:")]
    return proc.returncode, {ln.rsplit("|", 1)[1].strip() for ln in lines[1:]}


def test_a_dry_run_starts_within_its_module_budget_and_no_heavy_stack(tmp_path):
    code, mods = imported(
        ["run", "rl/nemo_rl/rlvr", "-c", "tiny", "--dry-run", "--runs-dir", str(tmp_path)], REPO
    )
    assert code in (0, 1) and "runners.run.execute" in mods
    assert len(mods) <= DRY_RUN_BUDGET, len(mods)
    assert sorted(m for m in mods if m.split(".")[0] in HEAVY) == []
    assert "runners.launch.submit" not in mods  # nothing is submitted
    assert "runners.launch.profiles.env_toml" not in mods  # no profile: none of its models built


def test_a_finding_is_printed_without_the_log_prefilter(tmp_path):
    code, mods = imported(["run", "no/such/step", "--dry-run"], tmp_path)
    assert code == 2 and "runners.monitor.terminal" in mods  # the finding was made safe to print
    assert sorted(mods & {"runners.monitor.logscan", "catalog.failures"}) == []


def _run_with_job(tmp_path: Path, state: str) -> Path:
    """A Slurm run of profile `lab` (localhost; nothing listens on its ssh port) in state STATE."""
    run_dir = tmp_path / "runs" / "rl" / "nemo_rl" / "dpo" / "20260101T000000Z-job00041"
    run_dir.mkdir(parents=True)
    job = {"executor": "slurm", "profile": "lab", "host": "localhost", "job_id": "41",
           "job_name": "steps-dpo-41", "state": state}  # fmt: skip
    record = {"step": "rl/nemo_rl/dpo", "job": job, "final_progress": {"step": 3, "max_steps": 3}}
    (run_dir / "run.json").write_text(json.dumps(record))
    (tmp_path / "env.toml").write_text(
        '[lab]\nexecutor = "slurm"\nhost = "localhost"\nremote_dir = "/srv/steps"\n'
        'ssh_options = ["-o", "ConnectTimeout=5", "-p", "1"]\n'
    )
    return run_dir


def test_status_of_one_hosts_job_asks_it_without_a_thread_pool(tmp_path):
    run_dir = _run_with_job(tmp_path, "RUNNING")
    code, mods = imported(["status", str(run_dir)], tmp_path, STEPS_ENV_FILE="")
    assert code == 2  # nothing listens on port 1: the state shown is UNKNOWN
    assert "runners.launch.backends" in mods and "concurrent.futures" not in mods
    assert "runners.pipeline.lineage" not in mods  # not a pipeline's: its cache is not loaded


def test_jobs_of_one_run_reads_its_progress_without_a_thread_pool(tmp_path):
    _run_with_job(tmp_path, "COMPLETED")
    code, mods = imported(["jobs", "--runs-dir", "runs"], tmp_path, STEPS_ENV_FILE="")
    assert code == 0 and "runners.monitor.progress" in mods and "concurrent.futures" not in mods


def test_a_pipeline_file_that_cannot_be_read_is_refused_before_the_run_stack_loads(tmp_path):
    code, mods = imported(["pipeline", "run", "missing.yaml", "--dry-run"], tmp_path)
    assert code == 2 and "catalog.pipeline" in mods
    assert sorted(mods & {"omegaconf", "runners.pipeline.runner"}) == []
