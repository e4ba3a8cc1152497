"""Progress read from what NeMo-RL writes: the driver log's banners and metrics (its print
statements at v0.7.0), the latest complete step_N's training_info.json, TensorBoard event files
(a real one, written by tensorboardX), without importing NeMo-RL."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from runners.launch.observe import JobFacts, run_jobs, run_progress
from runners.launch.records import job_of
from runners.monitor.progress import Progress, parse_log_tail
from runners.monitor.tfevents import read_scalars

DATA = Path(__file__).resolve().parent / "data"
TB_FILE = DATA / "tensorboard" / "events.out.tfevents.1763950000.tensorboardX"


def _step(k: int, m: int, loss: float, secs: float, save: int | None = None) -> str:
    saving = f"Saving checkpoint for step {save}...\n" if save else ""
    return (
        f"\n{'=' * 25} Step {k}/{m} {'=' * 25}\n▶ Preparing batch...\n{saving}"
        f"\n📊 Training Results:\n  • Loss: {loss:.4f}\n  • Generation KL Error: 0.0010\n"
        f"  • Avg Reward: {loss / 2:.4f}\n\n⏱️  Timing:\n  • Total step time: {secs:.2f}s\n"
        f"  • generation: 1.00s (50.0%)\n"
    )


def _epoch(e: int, total: int) -> str:
    return f"\n{'=' * 25} Epoch {e}/{total} {'=' * 25}\n"


def test_the_global_step_is_the_epochs_before_plus_the_banners_step_within_the_epoch():
    log = _epoch(1, 40) + "".join(_step(k, 3, 0.5, 2.0) for k in (1, 2, 3))
    log += _epoch(32, 40) + _step(1, 3, 0.25, 3.0)
    got = parse_log_tail(log)
    assert got.step == 94 and got.steps_per_epoch == 3  # the research's `Step 1/3` at step 94
    assert got.metrics == {"Loss": 0.25, "Generation KL Error": 0.001, "Avg Reward": 0.125}
    assert got.step_times == [2.0, 2.0, 2.0, 3.0]


def test_a_tail_without_its_epoch_banner_is_anchored_by_the_saving_line():
    log = "tial line cut by the tail\n" + _step(7, 50, 0.4, 5.0, save=207) + _step(8, 50, 0.3, 5.0)
    got = parse_log_tail(log, partial=True)
    assert got.step == 208 and got.metrics["Loss"] == 0.3


def test_a_timeout_stop_and_the_end_are_told_apart():
    assert (
        parse_log_tail("Timeout has been reached, stopping training early\n").stopped == "timeout"
    )
    end = "Max number of steps has been reached, stopping training early\n"
    assert parse_log_tail(end).stopped == "end"


def test_tensorboard_scalars_are_read_whole_and_from_any_tail():
    data = TB_FILE.read_bytes()
    whole = read_scalars(data)
    assert {s.tag for s in whole} == {"train/loss", "train/reward", "timing/train/total_step_time"}
    assert [s.step for s in whole if s.tag == "train/loss"] == list(range(1, 13))
    loss12 = next(s for s in whole if s.tag == "train/loss" and s.step == 12)
    assert abs(loss12.value - 0.38) < 1e-6 and loss12.wall_time == 1763950360.0
    for cut in range(1, len(data) - 1, 97):
        tail = read_scalars(data[cut:], from_tail=True)
        assert tail == whole[len(whole) - len(tail) :]


def _run_dir(tmp_path: Path, log_text: str, tensorboard: bool = False, state: str = "RUNNING"):
    """A run dir launched from here whose job wrote a driver log, checkpoints, TB files."""
    run_dir, job_dir = tmp_path / "runs" / "r1", tmp_path / "shared"
    (job_dir / "5-logs").mkdir(parents=True)
    run_dir.mkdir(parents=True)
    log = job_dir / "5-logs" / "ray-driver.log"
    log.write_text(log_text, encoding="utf-8")
    ckpt, logs = tmp_path / "ckpt", tmp_path / "logs"
    for name, total in (("step_2", 2), ("step_10", 10), ("tmp_step_11", 11)):
        (ckpt / name).mkdir(parents=True)
        info = {"epoch": 0, "step": total, "total_steps": total}
        (ckpt / name / "training_info.json").write_text(json.dumps(info))
    if tensorboard:
        (logs / "exp_001" / "tensorboard").mkdir(parents=True)
        (logs / "exp_001" / "tensorboard" / TB_FILE.name).write_bytes(TB_FILE.read_bytes())
    config = {
        "grpo": {"max_num_steps": 40, "max_num_epochs": 1},
        "checkpointing": {"checkpoint_dir": str(ckpt)},
        "logger": {"log_dir": str(logs), "tensorboard_enabled": tensorboard},
        "cluster": {"gpus_per_node": 8, "num_nodes": 2},
    }
    (run_dir / "resolved.yaml").write_text(json.dumps(config))
    job = {"executor": "slurm", "job_id": "5", "host": None, "state": state}
    job["log_path"] = str(log)
    return run_dir, {"job": job, "command_cwd": str(tmp_path)}, log


def test_the_latest_complete_checkpoint_counts_never_a_tmp_step(tmp_path):
    run_dir, data, _ = _run_dir(tmp_path, _epoch(1, 1) + _step(1, 40, 0.5, 2.0))
    facts = {"5": JobFacts("RUNNING", None, 5400.0, 2, "sacct")}
    got = run_progress(run_dir, data, facts=facts)
    assert got.checkpoint_step == 10 and got.step == 10 and got.max_steps == 40
    assert got.eta_seconds == 30 * 2.0
    assert got.gpu_hours == 2 * 8 * 1.5  # nodes x gpus_per_node x elapsed


def test_tensorboard_steps_and_metrics_count_when_the_logger_writes_them(tmp_path):
    run_dir, data, _ = _run_dir(tmp_path, "", tensorboard=True)
    got = run_progress(run_dir, data, facts={})
    assert got.step == 12 and abs(got.metrics["Loss"] - 0.38) < 1e-6
    assert abs(got.metrics["Avg Reward"] - 0.34) < 1e-6
    assert abs(got.step_seconds - 30.65) < 0.01  # median of timing/train/total_step_time


def test_a_running_job_quiet_for_k_median_steps_is_stalled_with_its_last_line(tmp_path):
    log = _epoch(1, 1) + _step(11, 40, 0.5, 20.0) + "▶ Generating responses for batch of size 64\n"
    run_dir, data, path = _run_dir(tmp_path, log)
    old = time.time() - 1000
    os.utime(path, (old, old))
    got = run_progress(run_dir, data, stall_factor=5, facts={})
    assert got.stalled and got.quiet_seconds > 900
    assert got.line().startswith("STALLED (")
    assert got.line().endswith("last line: ▶ Generating responses for batch of size 64")
    assert not run_progress(run_dir, data, stall_factor=60, facts={}).stalled


def test_the_one_line_shows_step_metric_time_eta_and_gpu_hours():
    p = Progress("RUNNING", 94, 300, 90, {"Loss": 0.25, "Avg Reward": 0.61}, 42.0, 8652.0, 12.34)
    assert p.line() == "step 94 of 300, reward 0.61, 42s/step, ETA 2.4h, 12.3 GPU-h"
    p.segment = "segment 2 of at most 10"
    assert p.line().startswith("segment 2 of at most 10, step 94 of 300")


def test_a_chains_gpu_hours_add_up_every_segment(tmp_path):
    run_dir, data, _ = _run_dir(tmp_path, "")
    data["segments"] = [{"job_id": "3", "state": "TIMEOUT"}, {"job_id": "4", "state": "TIMEOUT"}]
    jobs = run_jobs(data, job_of(data))
    assert [j.job_id for j in jobs] == ["3", "4", "5"] and jobs[0].executor == "slurm"
    facts = {i: JobFacts("TIMEOUT", 0, 3600.0, 2, "sacct") for i in ("3", "4", "5")}
    assert run_progress(run_dir, data, jobs, facts=facts).gpu_hours == 3 * 2 * 8
