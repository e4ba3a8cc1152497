"""What asking NeMo-RL's own code costs a dry run: `python bench/bench_upstream_judge.py`.

Medians of `steps run rl/nemo_rl/dpo -c tiny --dry-run`: with the upstream judge off
(STEPS_UPSTREAM_JUDGE_SECONDS=0), with a checkout whose interpreter has no nemo_rl (a laptop),
on and cold (its cache emptied before each run; the launcher probe stays cached), on and cached.
The judge runs MasterConfig, the tokenizer and NeMo-RL's CPU-side setup (data and its first rows,
logger, resume, loss, environments); `--model DIR` points policy.model_name and the tokenizer at
a local folder (a hub id is not fetched, so the tokenizer and the data stage are then skipped).
By default the launcher is this Python and the checkout a
stand-in with tests/upstream_standin's `nemo_rl` (the subprocess and pydantic cost, no torch);
`--nemo-rl <checkout> --launcher <NeMo-RL's python>` measures a real NeMo-RL (its imports of
torch, transformers and ray dominate the cold run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from abort import abort

REPO = Path(__file__).resolve().parent.parent
STANDIN = REPO / "tests" / "upstream_standin" / "nemo_rl"
SCRIPTS = ("examples/run_dpo.py", "examples/run_grpo.py", "examples/nemo_gym/run_grpo_nemo_gym.py")


def wall(cmd: list[str], env: dict, cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: findings (a real checkout's environment may have some)
        abort(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    if "W-UPSTREAM-JUDGE" in proc.stdout:
        abort(f"the upstream judge did not finish:\n{proc.stdout}")
    return elapsed


def stand_in_checkout(root: Path, with_nemo_rl: bool = True) -> Path:
    for rel in SCRIPTS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    if with_nemo_rl:
        shutil.copytree(STANDIN, root / "nemo_rl")
    return root


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--nemo-rl", type=Path, help="a NeMo-RL checkout (default: the stand-in)")
    p.add_argument("--launcher", default=sys.executable, help="the Python that imports nemo_rl")
    p.add_argument("--model", type=Path, help="a local HF model folder (policy + tokenizer)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        checkout = args.nemo_rl or stand_in_checkout(tmp_path / "nemo-rl")
        cache = tmp_path / "cache"
        env = {k: v for k, v in os.environ.items() if k not in ("STEPS_PATH", "NEMO_RL_HOME")}
        env.update(PYTHONPATH=str(REPO), STEPS_CACHE_DIR=str(cache))
        cmd = [sys.executable, "-m", "steps", "run", "rl/nemo_rl/dpo", "-c", "tiny", "--dry-run",
               "--nemo-rl", str(checkout), "--runs-dir", str(tmp_path / "runs"),
               "--launcher", args.launcher]  # fmt: skip
        if args.model:
            model = args.model.resolve()
            cmd += [f"policy.model_name={model}", f"policy.tokenizer.name={model}"]
        bare = stand_in_checkout(tmp_path / "no-nemo-rl", with_nemo_rl=False)
        absent = [str(bare) if x == str(checkout) else sys.executable if x == args.launcher else x
                  for x in cmd]  # a checkout and an interpreter without nemo_rl  # fmt: skip
        off = {**env, "STEPS_UPSTREAM_JUDGE_SECONDS": "0"}
        wall(cmd, off, tmp_path)  # warm-up: bytecode, the launcher probe, the digest memo
        wall(absent, env, tmp_path)
        times: dict[str, list[float]] = {
            "judge off": [],
            "no nemo_rl": [],
            "cold": [],
            "cached": [],
        }
        for _ in range(args.repeat):
            times["judge off"].append(wall(cmd, off, tmp_path))
            times["no nemo_rl"].append(wall(absent, env, tmp_path))
            shutil.rmtree(cache / "nemo-rl-steps" / "upstream", ignore_errors=True)
            times["cold"].append(wall(cmd, env, tmp_path))
            times["cached"].append(wall(cmd, env, tmp_path))
    base = statistics.median(times["judge off"])
    where = f"{checkout if args.nemo_rl else 'stand-in nemo_rl'}, launcher {args.launcher}"
    print(f"dry run of rl/nemo_rl/dpo -c tiny ({where}), median of {args.repeat}:")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:10s} {med * 1000:7.0f} ms  (+{(med - base) * 1000:.0f} ms vs judge off)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
