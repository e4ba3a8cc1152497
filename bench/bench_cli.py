"""CLI speed against a baseline measured in the same run: `python bench/bench_cli.py`.

Targets (issue 2): `list` within 1.5x of `python -c pass`; `check` over the catalog under 2 s.
`run ... --dry-run` (issue 28 item 8: the suite starts hundreds of CLI children) is reported as
wall and CPU (user + sys) against the baseline, without a target.
Each command runs alternately with the baseline so machine noise hits both equally.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from abort import abort

REPO = Path(__file__).resolve().parent.parent
LIST_TARGET = 1.5
CHECK_TARGET_S = 2.0


# As users run it: bytecode caches on (the warm-up run writes them), no extra catalog roots.
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "STEPS_PATH")}


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU = user + sys) seconds of one run of `cmd`, CPU from the kernel's accounting."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        abort(
            f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode()[-3000:]}"
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def median_pair(
    cmd: list[str], base: list[str], repeat: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Median (wall, CPU) of `cmd` and of `base`, interleaved, after one warm-up each."""
    timed(cmd), timed(base)
    a, b = [], []
    for _ in range(repeat):
        a.append(timed(cmd))
        b.append(timed(base))

    def med(runs: list[tuple[float, float]]) -> tuple[float, float]:
        return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)

    return med(a), med(b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="runs per command")
    args = parser.parse_args()
    py = sys.executable
    base = [py, "-c", "pass"]
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    print(f"bench_cli ({env_note}, median of {args.repeat})")
    failed = False
    dry = [py, "-m", "steps", "run", "--dry-run", "-c", "tiny"]  # writes nothing
    rows = [
        ("list", [py, "-m", "steps", "list"], args.repeat),
        ("show dpo", [py, "-m", "steps", "show", "dpo"], args.repeat),
        ("dry rlvr", [*dry, "rl/nemo_rl/rlvr"], max(5, args.repeat // 3)),
        ("dry rl_prep", [*dry, "data_prep/rl_prep"], max(5, args.repeat // 3)),
        ("check", [py, "-m", "steps", "check"], max(3, args.repeat // 6)),
    ]
    for name, cmd, n in rows:
        (t, cpu), (t0, cpu0) = median_pair(cmd, base, n)
        ratio = t / t0
        verdict = f"cpu {cpu * 1000:6.1f} ms ({cpu / cpu0:5.1f}x)"
        if name == "list":
            ok = ratio <= LIST_TARGET
            verdict += f"  target <= {LIST_TARGET}x: {'ok' if ok else 'MISSED'}"
            failed |= not ok
        elif name == "check":
            ok = t < CHECK_TARGET_S
            verdict += f"  target < {CHECK_TARGET_S:.0f} s: {'ok' if ok else 'MISSED'}"
            failed |= not ok
        times = f"{t * 1000:7.1f} ms  baseline {t0 * 1000:6.1f} ms"
        print(f"  {name:<11} {times}  {ratio:5.2f}x  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
