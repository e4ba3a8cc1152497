"""CLI speed against a baseline measured in the same run: `python bench/bench_cli.py`.

Targets (issue 2): `list` within 1.5x of `python -c pass`; `check` over the catalog under 2 s.
Each command runs alternately with the baseline so machine noise hits both equally.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIST_TARGET = 1.5
CHECK_TARGET_S = 2.0


# As users run it: bytecode caches on (the warm-up run writes them), no extra catalog roots.
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "STEPS_PATH")}


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        cmd, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - start


def median_pair(cmd: list[str], base: list[str], repeat: int) -> tuple[float, float]:
    """Median wall of `cmd` and of `base`, interleaved, after one warm-up each."""
    wall(cmd), wall(base)
    a, b = [], []
    for _ in range(repeat):
        a.append(wall(cmd))
        b.append(wall(base))
    return statistics.median(a), statistics.median(b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="runs per command")
    args = parser.parse_args()
    py = sys.executable
    base = [py, "-c", "pass"]
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    print(f"bench_cli ({env_note}, median of {args.repeat})")
    failed = False
    rows = [
        ("list", [py, "-m", "steps", "list"], args.repeat),
        ("show dpo", [py, "-m", "steps", "show", "dpo"], args.repeat),
        ("check", [py, "-m", "steps", "check"], max(3, args.repeat // 6)),
    ]
    for name, cmd, n in rows:
        t, t0 = median_pair(cmd, base, n)
        ratio = t / t0
        verdict = ""
        if name == "list":
            ok = ratio <= LIST_TARGET
            verdict = f"target <= {LIST_TARGET}x: {'ok' if ok else 'MISSED'}"
            failed |= not ok
        elif name == "check":
            ok = t < CHECK_TARGET_S
            verdict = f"target < {CHECK_TARGET_S:.0f} s: {'ok' if ok else 'MISSED'}"
            failed |= not ok
        times = f"{t * 1000:7.1f} ms  baseline {t0 * 1000:6.1f} ms"
        print(f"  {name:<10} {times}  {ratio:5.2f}x  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
