"""Config and override handling at scale: time and memory grow linearly (issue 39 case 5).

    .venv/bin/python bench/bench_config_scale.py              # 1e5 keys, a 20k list, a 50k one
    .venv/bin/python bench/bench_config_scale.py --keys 1000 --list 200 --big-list 500 \
        --overrides 500  # quick

Three cases are one `python -m steps run rl/nemo_rl/dpo --dry-run --json` each, in a fresh
subprocess: a user config inheriting the step's tiny config with N unknown top-level keys (each
a W-SCHEMA-UNKNOWN), the tiny config with one `++unk_list=[0,...,N-1]` override, and the tiny
config with N `++unk_k<i>=<i>` overrides (each a finding located at its override). A 50k list
is longer than one command-line argument may be on Linux (128 KiB), so that case compiles the
tiny config with the override in this process (as a pipeline stage's overrides are). Before
the fix 1e5 keys ran past 150 s (a key's file:line found by a scan of its mapping per key), a
20k list took 27 s and 50k 222-245 s (Hydra's visitor found element i by a scan of the list);
50k overrides ran past 15 min (each finding's override found by a scan of all of them).
Target: < 20 s CPU and < 1.5 GB peak RSS for the 1e5-key config and the 20k list (CPU time,
since a shared machine's wall time says more about its load). Exit 1 when a target is missed,
2 when a run fails.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from abort import abort

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "steps" / "rl" / "nemo_rl" / "dpo" / "config" / "tiny.yaml"
TARGET_S, TARGET_MB = 20.0, 1536


def timed(argv: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of `python -m steps run ...` in a fresh child."""
    code = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, "
        "text=True); w = time.perf_counter() - t; "
        "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(p.returncode, w, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024); "
        "sys.stderr.write(p.stderr[-2000:])"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-c", code, sys.executable, "-m", "steps", "run", *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    rc, wall, cpu, mb = proc.stdout.split()
    if int(rc) not in (0, 1) or "Traceback" in proc.stderr:
        abort(f"steps run {' '.join(a[:60] for a in argv)} exited {rc}:\n{proc.stderr}")
    return float(wall), float(cpu), float(mb)


def in_process(n: int) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB of this process) of compiling tiny with an n-element list."""
    sys.path.insert(0, str(REPO))
    from runners.config.compiler import compile_config

    token = "++unk_list=[" + ",".join(map(str, range(n))) + "]"
    wall, cpu = time.perf_counter(), time.process_time()
    compiled = compile_config(TINY, [token])
    if len(compiled.config.unk_list) != n:
        abort(f"the {n}-element list came out with {len(compiled.config.unk_list)} elements")
    mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return time.perf_counter() - wall, time.process_time() - cpu, mb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=100_000, help="unknown keys in the config")
    ap.add_argument("--list", type=int, default=20_000, help="list override on the command line")
    ap.add_argument("--big-list", type=int, default=50_000, help="list override in-process")
    ap.add_argument("--overrides", type=int, default=50_000, help="++k=v overrides (CLI)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    missed = False
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        config = cwd / "many_keys.yaml"
        lines = [f"defaults: {TINY}", *(f"unknown_key_{i}: {i}" for i in range(args.keys))]
        config.write_text("\n".join(lines) + "\n", encoding="utf-8")
        base = ["rl/nemo_rl/dpo", "--dry-run", "--json"]
        cases = [(f"config with {args.keys:,} unknown keys", [*base, "-c", str(config)], True)]
        token = "++unk_list=[" + ",".join(map(str, range(args.list))) + "]"
        cases.append((f"one list override of {args.list:,} elements (CLI)",
                      [*base, "-c", "tiny", token], True))  # fmt: skip
        adds = [f"++unk_k{i}={i}" for i in range(args.overrides)]
        cases.append((f"{args.overrides:,} ++k=v overrides (CLI)", [*base, "-c", "tiny", *adds],
                      False))  # fmt: skip
        for name, argv, held in [*cases, (f"one list of {args.big_list:,} (in-process)", [], 0)]:
            runs = [timed(argv, cwd) if argv else in_process(args.big_list)
                    for _ in range(args.repeat)]  # fmt: skip
            wall, cpu, mb = (min(r[0] for r in runs), min(r[1] for r in runs),
                             max(r[2] for r in runs))  # fmt: skip
            ok = cpu < TARGET_S and mb < TARGET_MB
            missed |= bool(held) and not ok
            verdict = ("ok" if ok else "MISSED") if held else "trend"
            print(f"{name}: {cpu:.1f} s CPU ({wall:.1f} s wall), peak {mb:.0f} MB ({verdict}; "
                  f"target < {TARGET_S:.0f} s CPU, < {TARGET_MB} MB)")  # fmt: skip
    raise SystemExit(1 if missed else 0)


if __name__ == "__main__":
    main()
