"""A chain's gap between segments: one segment's end to the next one's start, on the lab Slurm.

Run: `python bench/bench_chain.py [--segments 6] [--repeat 5]`.

Target (issue 23): the gap within Slurm's own scheduling interval. Brings up the tests' one-node
Slurm (tests/cluster/slurm-local.sh, no accounting) in a temp dir and submits a chain with
`run ... --batch lab --until-done` on the stand-in NeMo-RL (fake steps of 0.2 s, each segment
stopped by a 1-s checkpoint_must_save_by). The gap is read from the segment script's own first
and last lines (`date +%s.%N` in the batch output). Baselines measured in the same run: two
trivial jobs joined by `--dependency=afterany` (Slurm's own end-to-start interval, the floor of
any chain) and a plain `sbatch --wrap` job's submit-to-start latency. Also printed: the time our
decisions take inside a segment (`chain-step begin` and `end`, one Python start each).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from abort import abort
from slurm_lab import REPO, slurm_lab, stand_in_nemo_rl, steps_env

START, END = "@@steps-segment-start", "@@steps-segment-end"


def epoch(stamp: str) -> float:
    return (
        datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
    )


def wait_file(path: Path, timeout: float = 60) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.05)
    abort(f"no {path} within {timeout} s")


def slurm_gap(env: dict, out: Path, n: int) -> tuple[list[float], list[float]]:
    """(afterany end->start gaps, plain submit->start latencies) of trivial jobs, n of each."""
    gaps, starts = [], []
    for i in range(n):
        a, b, c = out / f"a{i}", out / f"b{i}", out / f"c{i}"
        first = ["sbatch", "--parsable", "--output=/dev/null", "--wrap", f"date +%s.%N > {a}"]
        job = subprocess.run(first, env=env, capture_output=True, text=True, check=True).stdout
        second = [
            "sbatch",
            "--parsable",
            "--output=/dev/null",
            f"--dependency=afterany:{job.strip()}",
        ]
        subprocess.run([*second, "--wrap", f"date +%s.%N > {b}"], env=env, check=True,
                       capture_output=True)  # fmt: skip
        gaps.append(float(wait_file(b)) - float(wait_file(a)))
        t0 = time.time()
        plain = ["sbatch", "--parsable", "--output=/dev/null", "--wrap", f"date +%s.%N > {c}"]
        subprocess.run(plain, env=env, check=True, capture_output=True)
        starts.append(float(wait_file(c)) - t0)
    return gaps, starts


def run_chain(env: dict, root: Path, work: Path, segments: int) -> tuple[list[float], list[float]]:
    """(gaps between segments, decision seconds per segment) of one chain."""
    argv = [sys.executable, "-m", "steps", "run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "lab"]
    argv += ["--until-done", f"dpo.max_num_steps={4 * segments}", "checkpointing.save_period=1000"]
    argv += ["--no-upstream-judge"]  # the gap between segments is measured, not the judge job
    proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        abort(f"submit failed: {proc.stderr[-3000:]}")
    job_dir = next((root / "shared" / "rl" / "nemo_rl" / "dpo").iterdir())
    end = time.monotonic() + 60 * segments
    chain: dict = {}
    while time.monotonic() < end:
        try:
            chain = json.loads((job_dir / "run.json").read_text())["chain"]
        except (OSError, ValueError):
            chain = {}
        if chain.get("state") in ("done", "stopped", "cancelled"):
            break
        time.sleep(0.2)
    if chain.get("state") != "done":
        abort(f"the chain did not finish: {chain.get('state')} {chain.get('reason')}")
    marks: list[tuple[float, float]] = []
    decide: list[float] = []
    for seg in chain["segments"]:
        out = job_dir / f"slurm-{seg['job_id']}.out"
        for _ in range(100):  # the script's last line follows the record's last write
            if END in out.read_text():
                break
            time.sleep(0.1)
        text = out.read_text()
        start = [float(x.split()[1]) for x in text.splitlines() if x.startswith(START)][-1]
        stop = [float(x.split()[1]) for x in text.splitlines() if x.startswith(END)][-1]
        marks.append((start, stop))
        seg_wall = stop - start
        inside = epoch(seg["ended_utc"]) - epoch(seg["started_utc"])
        decide.append(seg_wall - inside)
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(marks)]
    return gaps, decide


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--segments", type=int, default=6, help="segments per chain (about)")
    p.add_argument("--repeat", type=int, default=5, help="trivial-job baseline pairs")
    args = p.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        slurm_lab(Path(tmp), SLURM_LAB_ACCOUNTING="0") as lab,
    ):
        root = Path(tmp)
        rl = stand_in_nemo_rl(root)
        work = root / "work"
        work.mkdir()
        (work / "env.toml").write_text(
            f'[lab]\nexecutor = "slurm"\npartition = "debug"\ntime = "00:01:00"\n'
            f'save_margin = "00:00:59"\ncontainer_image = "img"\n'
            f'mounts = ["{root}:{root}", "{REPO}:{REPO}"]\nremote_dir = "{root}/shared"\n'
            f'nemo_rl_dir = "{rl}"\nlauncher = "{sys.executable}"\n'
            'env = { FAKE_STEP_SECONDS = "0.2" }\n',
            encoding="utf-8",
        )
        env = steps_env(root, lab, "STEPS_RUNS_DIR")
        (root / "marks").mkdir()
        slurm_gaps, plain_starts = slurm_gap(env, root / "marks", args.repeat)
        gaps, decide = run_chain(env, root, work, args.segments)
    gap, floor = statistics.median(gaps), statistics.median(slurm_gaps)
    start = statistics.median(plain_starts)
    print(f"chain: {len(gaps) + 1} segments, gaps end->start (s): "
          + " ".join(f"{g:.2f}" for g in gaps))  # fmt: skip
    print(f"segment end -> next segment start, median: {gap:.2f} s")
    print(f"Slurm's own afterany end -> start (trivial jobs), median: {floor:.2f} s")
    print(f"plain sbatch submit -> start (trivial job), median: {start:.2f} s")
    print(
        f"ratio chain gap / afterany floor: {gap / floor:.2f}x; / plain start: {gap / start:.2f}x"
    )
    print(f"our decisions inside a segment (chain-step begin + end), median: "
          f"{statistics.median(decide):.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
