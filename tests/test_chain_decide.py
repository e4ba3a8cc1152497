"""How a chain decides whether another segment may train: from NeMo-RL's checkpoints on disk and
the segments recorded so far (runners/chain/decide.py), the same for Slurm and Ray chains; and
what `--until-done` sets in the config so that each segment ends with a save (settings.py).

Checkpoints are real folders laid out as NeMo-RL saves them (`tmp_step_N` renamed to `step_N`
with training_info.json once the save is whole); segments are the chain record's own model.
"""

from __future__ import annotations

import json
from pathlib import Path

from runners.chain.decide import judge, latest_checkpoint
from runners.chain.record import ChainRecord, Failure, Segment
from runners.chain.settings import chain_overrides
from runners.launch.profiles.env_toml import SlurmProfile

NCCL = Failure(kind="nccl_timeout", retryable=True, evidence="driver.log:12")
IMPORT = Failure(kind="missing_module", retryable=False, evidence="driver.log:3")


def save(ckpt: Path, total: int, *, epoch: int = 0, step: int | None = None) -> None:
    """A whole save of global step `total` (NeMo-RL's rename has happened)."""
    folder = ckpt / f"step_{total}"
    (folder / "policy").mkdir(parents=True)
    info = {"epoch": epoch, "step": total if step is None else step, "total_steps": total}
    (folder / "training_info.json").write_text(json.dumps(info), encoding="utf-8")


def chain(ckpt: Path, *segments: Segment, **fields) -> ChainRecord:
    fields = {"max_steps": 10, **fields}
    return ChainRecord(
        checkpoint_dir=str(ckpt), job_name="steps-chain-x", segments=list(segments), **fields
    )


def seg(n: int, before: int, after: int | None, failure: Failure | None = None, **kw) -> Segment:
    return Segment(
        n=n, job_id=str(100 + n), steps_before=before, steps_after=after,
        ended_utc=None if after is None else "2026-11-26T10:00:00.000000Z",
        exit_code=1 if failure else 0, failure=failure, **kw,
    )  # fmt: skip


def test_the_latest_complete_step_is_read_and_a_save_cut_short_is_not(tmp_path):
    save(tmp_path, 4)
    save(tmp_path, 8)
    (tmp_path / "tmp_step_12" / "policy").mkdir(parents=True)  # killed during the save
    (tmp_path / "step_9").mkdir()  # no training_info.json: not a step reached
    assert latest_checkpoint(tmp_path).total_steps == 8
    assert latest_checkpoint(tmp_path / "nothing-yet") is None


def test_a_finished_run_is_done_before_its_setup_and_never_relaunched(tmp_path):
    save(tmp_path, 10)
    verdict = judge(chain(tmp_path, seg(1, 0, 10)), latest_checkpoint(tmp_path), cancelled=False)
    assert verdict is not None and verdict.state == "done"


def test_the_end_counts_global_steps_not_the_steps_within_an_epoch(tmp_path):
    save(tmp_path, 10, epoch=3, step=1)  # `step` restarts each epoch; total_steps does not
    assert judge(chain(tmp_path), latest_checkpoint(tmp_path), cancelled=False).state == "done"
    other = tmp_path / "epochs"
    save(other, 6, epoch=1, step=0)  # step 0 at an epoch's end: epochs 0 and 1 are whole
    by_epochs = chain(other, max_steps=None, max_epochs=2)
    assert judge(by_epochs, latest_checkpoint(other), cancelled=False).state == "done"
    assert (
        judge(chain(other, max_steps=None, max_epochs=3), latest_checkpoint(other), False) is None
    )


def test_a_deadline_stop_exits_0_like_the_end_but_only_the_end_is_done(tmp_path):
    save(tmp_path, 6)
    stopped_early = chain(tmp_path, seg(1, 0, 6))
    assert judge(stopped_early, latest_checkpoint(tmp_path), cancelled=False, exit_code=0) is None


def test_the_end_reached_by_a_segment_that_then_failed_is_not_done(tmp_path):
    save(tmp_path, 10)
    failed = chain(tmp_path, seg(1, 0, 10, NCCL))
    verdict = judge(failed, latest_checkpoint(tmp_path), cancelled=False, exit_code=1)
    assert verdict is None or verdict.state != "done"


def test_a_failure_a_retry_cannot_fix_stops_at_once(tmp_path):
    verdict = judge(chain(tmp_path, seg(1, 0, 3, IMPORT)), None, cancelled=False, exit_code=1)
    assert verdict.state == "stopped"
    assert "missing_module, which a retry cannot fix" in verdict.reason


def test_the_same_failure_at_the_same_step_twice_stops(tmp_path):
    twice = chain(tmp_path, seg(1, 0, 3, NCCL), seg(2, 3, 3, NCCL))
    verdict = judge(twice, None, cancelled=False, exit_code=1)
    assert verdict.state == "stopped"
    assert verdict.reason == "segments 1 and 2 failed the same way (nccl_timeout) at step 3"


def test_a_transient_failure_after_progress_goes_on(tmp_path):
    moved_on = chain(tmp_path, seg(1, 0, 3, NCCL), seg(2, 3, 5, NCCL))
    assert judge(moved_on, None, cancelled=False, exit_code=1) is None


def test_two_segments_in_a_row_that_saved_no_step_stop(tmp_path):
    stuck = chain(tmp_path, seg(1, 0, 4), seg(2, 4, 4), seg(3, 4, 4))
    verdict = judge(stuck, None, cancelled=False)
    assert verdict.state == "stopped"
    assert verdict.reason == "no training step saved in segments 2 and 3"
    one_idle = chain(tmp_path, seg(1, 0, 4), seg(2, 4, 4))
    assert judge(one_idle, None, cancelled=False) is None


def test_the_segment_limit_stops_the_chain(tmp_path):
    used = chain(tmp_path, seg(1, 0, 2), seg(2, 2, 4), max_segments=2)
    verdict = judge(used, None, cancelled=False)
    assert verdict.state == "stopped" and verdict.reason == "--max-segments 2 used up"
    assert judge(chain(tmp_path, seg(1, 0, 2), max_segments=2), None, cancelled=False) is None


def test_the_gpu_hour_budget_counts_every_segments_time_on_every_gpu(tmp_path):
    # 2 segments x 45 min on 8 GPUs = 12 GPU-hours
    spent = chain(
        tmp_path, seg(1, 0, 2, seconds=2700), seg(2, 2, 4, seconds=2700), gpus=8, gpu_hours=12
    )
    verdict = judge(spent, None, cancelled=False)
    assert verdict.state == "stopped"
    assert verdict.reason == "GPU-hour budget spent (12.00 of 12)"
    left = chain(tmp_path, seg(1, 0, 2, seconds=2700), gpus=8, gpu_hours=12)
    assert judge(left, None, cancelled=False) is None


def test_cancel_wins_over_everything(tmp_path):
    save(tmp_path, 10)
    verdict = judge(chain(tmp_path), latest_checkpoint(tmp_path), cancelled=True)
    assert verdict.state == "cancelled"


def _config(**checkpointing) -> dict:
    return {
        "checkpointing": {"enabled": True, "checkpoint_dir": "/shared/ckpt", **checkpointing},
        "dpo": {"max_num_steps": 10},
        "logger": {"wandb_enabled": True, "wandb": {"project": "p"}},
    }


def _slurm(time: str = "04:00:00", margin: str = "00:15:00") -> SlurmProfile:
    return SlurmProfile(executor="slurm", remote_dir="/shared", time=time, save_margin=margin)


def test_each_segment_saves_before_the_time_limit_minus_the_margin():
    tokens, findings, deadline, source = chain_overrides(_config(), _slurm(), "w1", True)
    assert findings == [] and (deadline, source) == ("00:03:45:00", "chain")
    assert "++checkpointing.checkpoint_must_save_by=00:03:45:00" in tokens
    assert {"++logger.wandb.id=w1", "++logger.wandb.resume=allow"} <= set(tokens)


def test_a_deadline_the_user_set_is_kept():
    user = _config(checkpoint_must_save_by="00:02:00:00")
    tokens, findings, deadline, source = chain_overrides(user, _slurm(), "w1", True)
    assert (deadline, source, findings) == ("00:02:00:00", "user", [])
    assert not [t for t in tokens if "checkpoint_must_save_by" in t]


def test_a_nemo_rl_without_the_deadline_key_warns_and_relies_on_save_period():
    _, findings, deadline, source = chain_overrides(_config(), _slurm(), "w1", False)
    assert (deadline, source) == (None, "unsupported")
    assert [(f.code, f.key) for f in findings] == [
        ("W-CHAIN-DEADLINE", "checkpointing.save_period")
    ]


def test_a_margin_that_leaves_no_training_time_is_an_error():
    _, findings, _, _ = chain_overrides(_config(), _slurm("00:10:00"), "w1", True)
    assert [f.code for f in findings] == ["E-CHAIN-TIME"]


def test_a_chain_without_checkpoints_cannot_resume():
    off = _config()
    off["checkpointing"]["enabled"] = False
    _, findings, _, _ = chain_overrides(off, _slurm(), "w1", True)
    assert [f.code for f in findings] == ["E-CHAIN-CHECKPOINTING"]


def test_a_deadline_of_the_users_later_than_the_time_limit_is_kept_with_a_warning():
    late = _config(checkpoint_must_save_by="00:05:00:00")  # a 4-hour job would be killed first
    tokens, findings, deadline, source = chain_overrides(late, _slurm(), "w1", True)
    assert (deadline, source) == ("00:05:00:00", "user")
    assert not [t for t in tokens if "checkpoint_must_save_by" in t]
    (warning,) = findings
    assert (warning.code, warning.key) == (
        "W-CHAIN-DEADLINE",
        "checkpointing.checkpoint_must_save_by",
    )
    assert not warning.is_error and "Slurm kills each segment" in warning.message
    assert warning.fix.startswith("set it to 00:03:45:00 or less")


def test_a_recorded_driver_that_exited_is_not_alive_while_still_a_zombie():
    """A Ctrl-C'd driver whose parent has not reaped it yet holds its pid as a zombie: the chain
    it drove is not busy (E-CHAIN-BUSY would refuse the run that carries it on)."""
    import socket
    import subprocess
    import sys
    import time

    from runners.chain.ray_resume import _alive

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    driver = f"{socket.gethostname()}:{child.pid}"
    stat = Path(f"/proc/{child.pid}/stat")
    deadline = time.monotonic() + 10
    while stat.read_text().rpartition(")")[2].split()[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert not _alive(driver)
    finally:
        child.wait()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert _alive(f"{socket.gethostname()}:{sleeper.pid}")
    finally:
        sleeper.kill()
        sleeper.wait()
