"""A chain segment that Slurm kills at its time limit, on the real one-node Slurm.

The user set a checkpoint_must_save_by later than the segment's one-minute `--time` (the chain
keeps it and warns), so NeMo-RL never stops by itself: slurmctld ends the job at its limit
(TIMEOUT; SIGTERM, on which NeMo-RL saves nothing). The next segment, queued behind it, records
the killed one with Slurm's state, resumes from the last complete `step_N` and trains on. The
test waits on Slurm's own clock (60-90 s) while doing no work: conftest hands this file out first.
"""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest
from cluster_fixtures import PYTHON, slurm, stand_in_checkout, wait_for  # noqa: F401
from test_chain_slurm import DPO, KEY, Chain, lab_env, write_profile

pytestmark = pytest.mark.slow
# One save per step; the user's deadline of an hour: only Slurm's limit ends a segment.
OVERRIDES = [
    "dpo.max_num_steps=1000",
    "checkpointing.save_period=1",
    "checkpointing.checkpoint_must_save_by=00:01:00:00",
]


@pytest.fixture(scope="module")
def killed(tmp_path_factory, slurm):  # noqa: F811
    """A chain whose first segment ran into its time limit and whose second one has trained."""
    root = tmp_path_factory.mktemp("timelimit")
    stand_in_checkout(root / "RL")
    (root / "work").mkdir()
    write_profile(root, {"FAKE_STEP_SECONDS": "0.5"}, gpu=False)
    env = lab_env(root, slurm, STEPS_OUTPUT=str(root / "out"), WANDB_API_KEY=KEY)
    argv = [PYTHON, "-m", "steps", "run", DPO, "-c", "tiny", "--batch", "lab", "--until-done"]
    submitted = subprocess.run(
        [*argv, *OVERRIDES], cwd=root / "work", env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    chain = Chain(root, env, submitted)

    def second_segment_trained() -> bool:
        segs = chain.record()["segments"]
        return len(segs) >= 2 and max(chain.ledger(), default=0) > segs[1]["steps_before"] + 1

    try:
        wait_for(second_segment_trained, timeout=150, step=0.5)
    finally:
        chain.steps("cancel", str(chain.run_dir))
    yield chain
    wait_for(lambda: chain.queue() == [], timeout=30)


def test_a_deadline_later_than_the_time_limit_is_kept_with_a_warning(killed):
    assert "W-CHAIN-DEADLINE" in killed.submitted.stderr
    assert killed.record()["must_save_by"] == "00:01:00:00"


def test_a_segment_killed_at_its_time_limit_is_recorded_with_slurms_state(killed):
    first = killed.record()["segments"][0]
    assert first["state"] == "TIMEOUT", first
    assert first["failure"]["kind"] == "time_limit" and first["failure"]["retryable"], first
    assert first["steps_after"] > 0  # saves were made before the kill


def test_the_next_segment_resumes_from_the_last_complete_step(killed):
    first, second = killed.record()["segments"][:2]
    assert second["steps_before"] == first["steps_after"]
    ledger = killed.ledger()
    assert sorted(set(ledger)) == list(range(1, max(ledger) + 1))  # no step skipped
    # SIGTERM saves nothing: only a step trained after the last save is trained again.
    again = [step for step, n in Counter(ledger).items() if n > 1]
    assert again in ([], [first["steps_after"] + 1]), again
