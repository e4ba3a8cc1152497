"""Benchmark `validate` on a large NeMo-Gym JSONL against a bare Python loop over its lines.

    .venv/bin/python bench/bench_validate.py --rows 400000   # ~600-700 MB, cached in bench/.data

Prints the baseline (`for line in f: pass`, binary), the validate wall time in a fresh
subprocess (as a user runs it, with the per-row resource-server field check on unless
--no-server-check), their ratio (target <= 3x) and the subprocess's peak RSS
(children's ru_maxrss: the largest of the CLI process and its workers; target < 200 MB).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from abort import abort
from gen_gym_rows import generate


def bare_loop(path: Path) -> float:
    t = time.perf_counter()
    with open(path, "rb") as f:
        for _line in f:
            pass
    return time.perf_counter() - t


def server_routes() -> str:
    """A `routes` contract option sending every agent of the generated rows to a server that
    requires `question` and `expected_answer` (strings), as math_with_judge does: the per-row
    resource-server check (E-GYM-TASK-FIELD) is then on for every row."""
    import json

    from gen_gym_rows import AGENTS

    fields = {k: {"required": True, "types": ["string"]} for k in ("question", "expected_answer")}
    routes = {a: {"server": "math_with_judge", "fields": fields} for a in AGENTS}
    return "routes=" + json.dumps(routes)


def run_validate(path: Path, extra: tuple[str, ...] = ()) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB, and exit code of `python -m steps validate`."""
    cmd = [sys.executable, "-m", "steps", "validate", "nemo_gym_jsonl", str(path), *extra]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        abort(f"validate failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall, rss_kb / 1024, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--repeat", type=int, default=3, help="best of N for each timing")
    ap.add_argument(
        "--no-server-check",
        action="store_true",
        help="leave the per-row resource-server field check off (it is on by default)",
    )
    args = ap.parse_args()
    extra = () if args.no_server_check else ("--option", server_routes())
    path = generate(args.rows)
    size = path.stat().st_size
    bare_loop(path)  # warm the page cache
    base = min(bare_loop(path) for _ in range(args.repeat))
    runs = [run_validate(path, extra) for _ in range(args.repeat)]
    wall = min(r[0] for r in runs)
    rss = max(r[1] for r in runs)
    print(f"file: {path} ({size / 1e6:.0f} MB, {args.rows} rows)")
    print(f"bare loop over lines: {base:.3f} s ({size / 1e6 / base:.0f} MB/s)")
    print(f"validate (subprocess): {wall:.3f} s ({size / 1e6 / wall:.0f} MB/s), exit {runs[0][2]}")
    print(f"ratio: {wall / base:.2f}x (target <= 3x)")
    print(f"peak RSS: {rss:.0f} MB (target < 200 MB)")


if __name__ == "__main__":
    main()
