"""rl_prep speed and memory against `cp` of the same input, measured in the same run.

    python bench/bench_rl_prep.py              # 400k rows (~600 MB), at 1x and 4x input
    python bench/bench_rl_prep.py --rows 50000 # quick

Targets (issue 5): wall time within 1.5x of `cp`; peak RSS under 300 MB and flat from 1x to 4x.
The input is a generated NeMo-Gym JSONL cached in bench/.data; 4x is the same file listed as four
datasets. The page cache is warmed first so both sides read from memory and write to disk.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / ".data"
WALL_TARGET = 1.5
RSS_TARGET_MB = 300
TEXT = (
    "the of and a to in is that it was for on are as with his they at be this from have or "
    "by one had not but what all were when we there can an your which their said if do will "
    "each about how up out them then she many some so these would other into has more her two"
)


def generate(path: Path, rows: int) -> None:
    """A NeMo-Gym file of `rows` rows, ~1.5 KB each (a math_with_judge-like shape)."""
    rng = random.Random(0)
    words = TEXT.split(" ")
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for i in range(rows):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(180, 300)))
            row = {
                "responses_create_params": {
                    "input": [
                        {"role": "system", "content": "Reason step by step, then answer."},
                        {"role": "user", "content": f"Problem {i}: {text}?"},
                    ],
                    "max_output_tokens": 4096,
                },
                "agent_ref": {"type": "responses_api_agents", "name": "math_with_judge_agent"},
                "question": f"Problem {i}: {text[:120]}?",
                "expected_answer": str(rng.randint(0, 10**6)),
                "id": f"bench-{i:07d}",
            }
            fh.write(json.dumps(row) + "\n")
    os.replace(tmp, path)


def run_measured(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{err}")
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


def measure(src: Path, copies: int, work: Path) -> dict:
    blend = work / f"blend_{copies}x.json"
    datasets = [{"name": f"d{k}", "path": str(src), "transform": "nemo_gym"} for k in range(copies)]
    blend.write_text(json.dumps({"datasets": datasets}))
    out = work / f"out_{copies}x"
    # cp writes as many bytes as prep reads, to files kept until timed, as prep's shards are
    targets = [work / f"cp_{k}.jsonl" for k in range(copies)]
    start = time.perf_counter()
    for dst in targets:
        subprocess.run(["cp", str(src), str(dst)], check=True)
    cp_s = time.perf_counter() - start
    for dst in targets:
        dst.unlink()
    prep_s, rss = run_measured([sys.executable, "-c", PREP, str(blend), str(out)])
    shutil.rmtree(out, ignore_errors=True)
    return {"copies": copies, "cp_s": cp_s, "prep_s": prep_s, "rss_mb": rss}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000, help="rows in the 1x input")
    parser.add_argument("--scales", default="1,4", help="input multiples to measure")
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    src = DATA / f"gym_{args.rows}.jsonl"
    if not src.exists():
        print(f"generating {src} ...", file=sys.stderr)
        generate(src, args.rows)
    size_mb = src.stat().st_size / 1e6
    with open(src, "rb") as fh:  # warm the page cache for both sides
        while fh.read(1 << 24):
            pass
    work = DATA / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    print(f"input: {args.rows} rows, {size_mb:.0f} MB ({src})")
    print(f"{'input':>8} {'cp s':>8} {'prep s':>8} {'ratio':>7} {'peak RSS':>10}")
    results = []
    for copies in (int(s) for s in args.scales.split(",")):
        r = measure(src, copies, work)
        results.append(r)
        ratio = r["prep_s"] / r["cp_s"]
        print(
            f"{copies:>7}x {r['cp_s']:>8.2f} {r['prep_s']:>8.2f} {ratio:>6.2f}x "
            f"{r['rss_mb']:>7.0f} MB"
        )
    shutil.rmtree(work, ignore_errors=True)
    worst = max(r["prep_s"] / r["cp_s"] for r in results)
    peak = max(r["rss_mb"] for r in results)
    print(
        f"wall vs cp: {worst:.2f}x (target <= {WALL_TARGET}x) "
        f"{'OK' if worst <= WALL_TARGET else 'MISSED'}; "
        f"peak RSS {peak:.0f} MB (target < {RSS_TARGET_MB} MB) "
        f"{'OK' if peak < RSS_TARGET_MB else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
