"""`validate --max-errors 5` on millions of bad rows against as many good rows, in the same run.

    .venv/bin/python bench/bench_validate_bad.py               # 5M lines each (audit case 15)
    .venv/bin/python bench/bench_validate_bad.py --lines 500000 # quick

--max-errors bounds what is printed; every bad row is still counted, so the time of a file of
bad rows should stay near that of as many good rows (before the fix: 46-71 s for 10 MB of 5M
bad lines, about 30x the good rows). The bad file mixes the usual kinds: junk lines, truncated
objects and malformed ones that start with `{` and end with `}` (the slowest to refuse). Prints
both wall times of `python -m steps validate` in a fresh subprocess, their ratio and the
validate's exit codes (good 0, bad 1). Files are cached in bench/.data.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from abort import abort
from gen_gym_rows import DATA_DIR as DATA

GOOD = b'{"a": 1}\n'
EXPECTED = {"good": 0, "bad": 1}  # validate's exit: no findings / findings
BAD = (b"x\n", b'{"a": 1\n', b'{"a": }\n')


def generate(lines: int) -> tuple[Path, Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    good, bad = DATA / f"good_{lines}.jsonl", DATA / f"bad_{lines}.jsonl"
    if not good.exists():
        good.write_bytes(GOOD * lines)
    if not bad.exists():
        third = lines // len(BAD)
        body = b"".join(kind * third for kind in BAD)
        bad.write_bytes(body + BAD[0] * (lines - third * len(BAD)))
    return good, bad


def run_validate(path: Path, type_name: str) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "steps", "validate", type_name, str(path), "--max-errors", "5"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - start, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--type", default="training_jsonl", help="artifact type to validate as")
    ap.add_argument("--repeat", type=int, default=2, help="best of N for each timing")
    args = ap.parse_args()
    good, bad = generate(args.lines)
    timings = {}
    for name, path in (("good", good), ("bad", bad)):
        runs = [run_validate(path, args.type) for _ in range(args.repeat)]
        if {rc for _, rc in runs} != {EXPECTED[name]}:
            abort(
                f"validate of the {name} rows: exit {[rc for _, rc in runs]}, not {EXPECTED[name]}"
            )
        wall = min(r[0] for r in runs)
        timings[name] = wall
        size = path.stat().st_size / 1e6
        print(
            f"{name} rows: {args.lines} lines, {size:.0f} MB, {wall:.2f} s "
            f"({args.lines / wall / 1e6:.2f} M lines/s), exit {runs[0][1]}"
        )
    print(f"ratio bad/good: {timings['bad'] / timings['good']:.2f}x")


if __name__ == "__main__":
    main()
