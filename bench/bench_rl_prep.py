"""rl_prep speed and memory against `cp` of the same input, measured in the same run.

    python bench/bench_rl_prep.py              # 400k rows (~700 MB), at 1x and 4x input
    python bench/bench_rl_prep.py --rows 50000 # quick

Targets (issue 5): wall time within 1.5x of `cp`; peak RSS under 300 MB and flat from 1x to 4x.
A third column, `floor`, is the least any implementation must do, with no parsing at all and
both cores busy: `cp` the bytes while another process sha256s them (the manifest's digests).
Where `floor` alone is past 1.5x `cp`, that target cannot be met on this machine. A fourth,
`val+cp`, is the real floor of a checked copy: `python -m steps validate` of each input (every
row through the same contract) followed by a `cp` of it; rl_prep does both, plus the split.
The input is bench/gen_gym_rows.py's NeMo-Gym JSONL (the validate benchmark's), cached in
bench/.data; 4x is the same file listed as four datasets. The page cache is warmed first and
`sync` runs before every timing, so each side reads from memory and starts with no dirty pages
of the other's writes; each figure is the best of --repeat runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from abort import abort
from gen_gym_rows import DATA_DIR as DATA
from gen_gym_rows import generate

REPO = Path(__file__).resolve().parent.parent
WALL_TARGET = 1.5
RSS_TARGET_MB = 300


def run_measured(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        abort(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{err}")
    rss_kb = usage.ru_maxrss  # kilobytes on Linux
    return wall, rss_kb / 1024


PREP = """
import sys
from pathlib import Path
from runners.rl_prep import run_step
blend, out = sys.argv[1], sys.argv[2]
run_step({"blend_path": blend, "output_dir": out, "output_type": "nemo_gym_jsonl",
          "train_ratio": 0.98, "val_ratio": 0.01, "shard_size": "256MB", "seed": 1234,
          "sample": None, "on_bad_row": "error", "force": True}, config_dir=Path("."))
"""


SHA256 = """
import hashlib, sys
block = bytearray(4 << 20)
view = memoryview(block)
for _ in range(int(sys.argv[2])):
    sha = hashlib.sha256()
    with open(sys.argv[1], "rb", buffering=0) as fh:
        while n := fh.readinto(block):
            sha.update(view[:n])
"""


def _floor(src: Path, targets: list[Path]) -> float:
    """`cp` and a sha256 of the same bytes at once, on the two cores: the least rl_prep must
    do (write every byte, hash every byte) with no parsing and perfect parallelism."""
    os.sync()
    start = time.perf_counter()
    sha = subprocess.Popen([sys.executable, "-c", SHA256, str(src), str(len(targets))])
    for dst in targets:
        subprocess.run(["cp", str(src), str(dst)], check=True)
    sha.wait()
    wall = time.perf_counter() - start
    for dst in targets:
        dst.unlink()
    return wall


def _cp(src: Path, targets: list[Path]) -> float:
    os.sync()
    start = time.perf_counter()
    for dst in targets:
        subprocess.run(["cp", str(src), str(dst)], check=True)
    wall = time.perf_counter() - start
    for dst in targets:
        dst.unlink()
    return wall


def _validate_cp(src: Path, targets: list[Path]) -> float:
    """`steps validate` of the input, then `cp` of it, once per copy: checking every row and
    writing it cannot cost less."""
    os.sync()
    start = time.perf_counter()
    for dst in targets:
        cmd = [sys.executable, "-m", "steps", "validate", "nemo_gym_jsonl", str(src)]
        subprocess.run(
            cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        subprocess.run(["cp", str(src), str(dst)], check=True)
    wall = time.perf_counter() - start
    for dst in targets:
        dst.unlink()
    return wall


def _prep(blend: Path, out: Path) -> tuple[float, float]:
    os.sync()
    wall, rss = run_measured([sys.executable, "-c", PREP, str(blend), str(out)])
    shutil.rmtree(out, ignore_errors=True)
    return wall, rss


def measure(src: Path, copies: int, work: Path, repeat: int) -> dict:
    blend = work / f"blend_{copies}x.json"
    datasets = [{"name": f"d{k}", "path": str(src), "transform": "nemo_gym"} for k in range(copies)]
    blend.write_text(json.dumps({"datasets": datasets}))
    out = work / f"out_{copies}x"
    # cp writes as many bytes as prep reads, to files kept until timed, as prep's shards are
    targets = [work / f"cp_{k}.jsonl" for k in range(copies)]
    cp_s = floor_s = prep_s = valcp_s = float("inf")
    rss = 0.0
    for _ in range(repeat):  # alternate, so every side sees the same machine
        cp_s = min(cp_s, _cp(src, targets))
        floor_s = min(floor_s, _floor(src, targets))
        valcp_s = min(valcp_s, _validate_cp(src, targets))
        wall, peak = _prep(blend, out)
        prep_s, rss = min(prep_s, wall), max(rss, peak)
    return {
        "copies": copies,
        "cp_s": cp_s,
        "floor_s": floor_s,
        "valcp_s": valcp_s,
        "prep_s": prep_s,
        "rss_mb": rss,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000, help="rows in the 1x input")
    parser.add_argument("--scales", default="1,4", help="input multiples to measure")
    parser.add_argument("--repeat", type=int, default=3, help="best of N for each timing")
    args = parser.parse_args()
    src = generate(args.rows)
    size_mb = src.stat().st_size / 1e6
    with open(src, "rb") as fh:  # warm the page cache for both sides
        while fh.read(1 << 24):
            pass
    work = DATA / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    print(f"input: {args.rows} rows, {size_mb:.0f} MB ({src})")
    print(
        f"{'input':>8} {'cp s':>8} {'floor s':>8} {'val+cp s':>9} {'prep s':>8} {'floor/cp':>9} "
        f"{'prep/cp':>8} {'prep/val+cp':>12} {'peak RSS':>10}"
    )
    results = []
    for copies in (int(s) for s in args.scales.split(",")):
        r = measure(src, copies, work, args.repeat)
        results.append(r)
        print(
            f"{copies:>7}x {r['cp_s']:>8.2f} {r['floor_s']:>8.2f} {r['valcp_s']:>9.2f} "
            f"{r['prep_s']:>8.2f} {r['floor_s'] / r['cp_s']:>8.2f}x "
            f"{r['prep_s'] / r['cp_s']:>7.2f}x {r['prep_s'] / r['valcp_s']:>11.2f}x "
            f"{r['rss_mb']:>7.0f} MB"
        )
    shutil.rmtree(work, ignore_errors=True)
    worst = max(r["prep_s"] / r["cp_s"] for r in results)
    peak = max(r["rss_mb"] for r in results)
    floor = max(r["floor_s"] / r["cp_s"] for r in results)
    print(
        f"floor (cp alongside a sha256, no parsing) vs cp: {floor:.2f}x; "
        f"prep vs floor: {max(r['prep_s'] / r['floor_s'] for r in results):.2f}x; "
        f"prep vs validate+cp: {max(r['prep_s'] / r['valcp_s'] for r in results):.2f}x"
    )
    print(
        f"wall vs cp: {worst:.2f}x (target <= {WALL_TARGET}x) "
        f"{'OK' if worst <= WALL_TARGET else 'MISSED'}; "
        f"peak RSS {peak:.0f} MB (target < {RSS_TARGET_MB} MB) "
        f"{'OK' if peak < RSS_TARGET_MB else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
