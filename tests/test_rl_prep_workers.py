"""rl_prep's worker processes end cleanly after a bad row, every time.

`multiprocessing.Pool.terminate()` once hung the suite for 7 minutes after a bad row (its task
handler thread waited for a queue lock a killed worker held). The runs go in a child process
with a deadline, so a hang fails this test instead of stalling the suite; once with only the
main thread alive (workers forked from it) and once with tqdm's monitor thread alive, as in the
run that hung (workers from a forkserver).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from run_fixtures import REPO

RUNS = 50
# The child: the same bad row, 50 times over, two workers, tiny chunks (many in flight when
# the error comes), with or without a live tqdm monitor thread.
CHILD = """
import io, json, sys, threading, time
from pathlib import Path
from tqdm import tqdm
from catalog.errors import StepsError
from runners.rl_prep import build, run_step

folder, runs, monitor = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "monitor"
build.CHUNK_BYTES = 1000
if monitor:
    bar = tqdm(total=1, file=io.StringIO(), disable=False)
assert threading.active_count() == (2 if monitor else 1)
config = {"blend_path": str(folder / "blend.json"), "output_dir": str(folder / "out"),
          "output_type": "nemo_gym_jsonl", "train_ratio": 0.98, "val_ratio": 0.01,
          "shard_size": "256MB", "seed": 1, "sample": None, "on_bad_row": "error",
          "force": False, "workers": 2}
seconds = []
for _ in range(runs):
    start, found = time.perf_counter(), None
    try:
        run_step(config, config_dir=folder)
    except StepsError as exc:
        found = exc.finding
    seconds.append(time.perf_counter() - start)
    assert (found.code, found.line) == ("E-GYM-ROW", 48), found
    assert not (folder / "out").exists()
print(json.dumps(seconds))
"""


@pytest.mark.slow
@pytest.mark.parametrize("threads", ["alone", "monitor"])
def test_a_bad_row_with_two_workers_ends_cleanly_fifty_times(tmp_path: Path, threads: str):
    rows = [
        {"responses_create_params": {"input": f"question {i}"}, "agent_ref": {"name": "a"}}
        for i in range(60)
    ]
    rows[47]["responses_create_params"]["input"] = ""
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "blend.json").write_text(
        json.dumps({"datasets": [{"name": "a", "path": "a.jsonl"}]})
    )
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), str(RUNS), threads],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,  # 50 runs take a few seconds; a run that hangs fails here
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seconds = json.loads(proc.stdout)
    assert len(seconds) == RUNS and max(seconds) < 10, seconds
