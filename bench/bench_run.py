"""`run --dry-run` wall time vs `python -c pass`: `python bench/bench_run.py`.

Target (issue 3): `python -m steps run <tiny step> --dry-run` under 1 s wall on this machine.
The tiny step is the shipped DPO tiny config with a fake NeMo-RL checkout (one script file),
so the run is complete: compile, bind, preflight, run dir, printed command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from abort import abort

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 1.0


def wall(cmd: list[str], env: dict, cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0,):
        abort(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}")
    return elapsed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--step", default="rl/nemo_rl/dpo")
    p.add_argument("--config", default="tiny")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        checkout = tmp_path / "nemo-rl"
        for rel in (
            "examples/run_dpo.py",
            "examples/run_grpo.py",
            "examples/nemo_gym/run_grpo_nemo_gym.py",
        ):
            (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
            (checkout / rel).write_text("")
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONDONTWRITEBYTECODE", "STEPS_PATH", "NEMO_RL_HOME")
        }
        env["PYTHONPATH"] = str(REPO)
        env["TORCH_CUDA_ARCH_LIST"] = "9.0"  # as NeMo-RL's container sets it (E-MEGATRON-ARCH-LIST)
        cmd = [
            sys.executable,
            "-m",
            "steps",
            "run",
            args.step,
            "-c",
            args.config,
            "--dry-run",
            "--nemo-rl",
            str(checkout),
            "--runs-dir",
            str(tmp_path / "runs"),
        ]
        base = [sys.executable, "-c", "pass"]
        wall(cmd, env, tmp_path), wall(base, env, tmp_path)  # warm-up: bytecode caches
        a, b = [], []
        for _ in range(args.repeat):
            a.append(wall(cmd, env, tmp_path))
            b.append(wall(base, env, tmp_path))
    run_s, base_s = statistics.median(a), statistics.median(b)
    print(
        f"run {args.step} -c {args.config} --dry-run: {run_s * 1000:.0f} ms "
        f"(median of {args.repeat}; target < {TARGET_S * 1000:.0f} ms)"
    )
    print(f"python -c pass: {base_s * 1000:.0f} ms; ratio {run_s / base_s:.1f}x")
    ok = run_s < TARGET_S
    print("OK" if ok else "MISS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
