"""`run --batch PROFILE` wall time minus a bare `sbatch --wrap true`.

Run: `python bench/bench_submit.py`.

Target (issue 13): our overhead over Slurm's own submit under 0.5 s. Brings up the tests'
one-node Slurm (tests/cluster/slurm-local.sh) in a temp dir, then alternates the two commands
(each a fresh process, as a user runs them) and reports medians, the difference and the ratio.
The `steps` run is the shipped DPO tiny config on the stand-in NeMo-RL checkout: compile, bind,
preflight, the cluster probe, run dir staged under remote_dir, sbatch of ray.sub.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from abort import abort
from slurm_lab import REPO, slurm_lab, stand_in_nemo_rl, steps_env

TARGET_S = 0.5


def wall(cmd: list[str], env: dict, cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        abort(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return elapsed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, slurm_lab(Path(tmp)) as lab:
        root = Path(tmp)
        rl = stand_in_nemo_rl(root)
        work = root / "work"
        work.mkdir()
        (work / "env.toml").write_text(
            f'[lab]\nexecutor = "slurm"\npartition = "debug"\ngpus_per_node = 1\n'
            f'container_image = "img"\nmounts = ["{root}:{root}", "{REPO}:{REPO}"]\n'
            f'remote_dir = "{root}/shared"\nnemo_rl_dir = "{rl}"\n'
            f'launcher = "{sys.executable}"\n',
            encoding="utf-8",
        )
        env = steps_env(root, lab)
        ours = [sys.executable, "-m", "steps", "run", "rl/nemo_rl/dpo", "-c", "tiny"]
        ours += ["--batch", "lab"]
        bare = ["sbatch", "--parsable", "--partition=debug", "--wrap", "true"]
        wall(ours, env, work)  # warm caches (catalog manifest cache, page cache)
        steps_t, sbatch_t = [], []
        for _ in range(args.repeat):
            steps_t.append(wall(ours, env, work))
            sbatch_t.append(wall(bare, env, work))
    s, b = statistics.median(steps_t), statistics.median(sbatch_t)
    print(f"steps run --batch: median {s:.3f} s over {args.repeat} (min {min(steps_t):.3f})")
    print(f"sbatch --wrap true: median {b:.3f} s (min {min(sbatch_t):.3f})")
    print(f"overhead: {s - b:.3f} s ({s / b:.1f}x sbatch); target < {TARGET_S} s")
    return 0 if s - b < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
