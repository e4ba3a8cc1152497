"""Smoke run of every benchmark: each `bench/bench_*.py` once, with its smallest options.

    .venv/bin/python bench/smoke.py [--only NAME ...] [--timeout S]

Nothing else runs the benchmarks, so a refactor can break one silently (a traceback, a step
that now stops at a new finding). This runs each once under a timeout, in its own temporary
folder (cwd, TMPDIR and BENCH_DATA, where generated inputs are cached), and prints one line per
bench: name, seconds, ok / crashed / skipped. The figures themselves mean nothing at this size.

A bench exits 0 (target met, or it has none), 1 (a target missed: not a smoke failure, for the
benches whose SMOKE entry says they may) or 2 (it could not measure: a command it times failed;
bench/abort.py). A crash is any other exit (2 included), a Python traceback on stderr, or the
timeout. Benches on the tests' one-node Slurm (bench/slurm_lab.py) run only where slurmctld,
slurmd and sbatch are installed, else they are reported as skipped with the reason. A
`bench_*.py` without a SMOKE entry is a crash too, so a new bench cannot be left out.
Not run: gpu_smoke.sh and oracle_cpu.* (a GPU, the network, a real NeMo-RL).

Exit 1 naming each crashed bench, 0 otherwise. ~50 s on 2 cores with Slurm (.ci/run runs it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SLURM_TOOLS = ("slurmctld", "slurmd", "sbatch")


@dataclass(frozen=True)
class Smoke:
    """How one bench runs in the smoke: its script, smallest options, whether a missed target
    exits 1, and whether it needs the tests' Slurm."""

    script: str
    args: tuple[str, ...] = ()
    misses_exit_1: bool = False
    slurm: bool = False


SMOKE = {
    "bench_chain": Smoke("bench_chain.py", ("--segments", "2", "--repeat", "1"), slurm=True),
    "bench_cli": Smoke("bench_cli.py", ("--repeat", "1"), misses_exit_1=True),
    "bench_config": Smoke("bench_config.py", ("--repeat", "1"), misses_exit_1=True),
    "bench_config_engine": Smoke(
        "bench_config_engine.py", ("--repeat", "1", "--runs", "1"), misses_exit_1=True
    ),
    "bench_config_scale": Smoke(
        "bench_config_scale.py", ("--keys", "500", "--list", "100", "--big-list", "200")
    ),
    "bench_input_identity": Smoke("bench_input_identity.py", ("--size-mb", "1")),
    "bench_jobs": Smoke("bench_jobs.py", ("--runs", "2", "--repeat", "1"), True, slurm=True),
    "bench_pipeline": Smoke("bench_pipeline.py", ("--repeat", "1"), misses_exit_1=True),
    "bench_pipeline --cluster": Smoke(
        "bench_pipeline.py", ("--cluster", "--repeat", "1"), misses_exit_1=True, slurm=True
    ),
    "bench_preflight": Smoke("bench_preflight.py", ("--repeat", "1", "--rows", "200"), True),
    "bench_rl_prep": Smoke("bench_rl_prep.py", ("--rows", "200", "--scales", "1", "--repeat", "1")),
    "bench_run": Smoke("bench_run.py", ("--repeat", "1"), misses_exit_1=True),
    "bench_status": Smoke("bench_status.py", ("--gb", "0.01", "--repeat", "1"), slurm=True),
    "bench_submit": Smoke("bench_submit.py", ("--repeat", "1"), misses_exit_1=True, slurm=True),
    "bench_upstream_judge": Smoke("bench_upstream_judge.py", ("--repeat", "1")),
    "bench_validate": Smoke("bench_validate.py", ("--rows", "200", "--repeat", "1")),
    "bench_validate_bad": Smoke("bench_validate_bad.py", ("--lines", "300", "--repeat", "1")),
}


def crash_reason(smoke: Smoke, rc: int, stderr: str) -> str | None:
    """Why this finished run is a crash, or None when it is not."""
    if "Traceback (most recent call last)" in stderr:
        return f"traceback (exit {rc})"
    if rc == 0 or (rc == 1 and smoke.misses_exit_1):
        return None
    return f"exit {rc}"


def stop(proc: subprocess.Popen) -> None:
    """End a bench past its timeout: SIGINT first, so its `finally` blocks take the Slurm lab
    and sshd down, then SIGKILL to its process group."""
    for sig, grace in ((signal.SIGINT, 20), (signal.SIGKILL, 5)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.communicate(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run_one(name: str, smoke: Smoke, tmp: Path, timeout: float) -> tuple[str, float, str]:
    """(verdict, seconds, detail) of one bench run in its own folder under tmp."""
    if smoke.slurm and (missing := [t for t in SLURM_TOOLS if shutil.which(t) is None]):
        return "skipped", 0.0, f"needs the tests' Slurm: {', '.join(missing)} not installed"
    work = tmp / name.replace(" ", "_").lstrip("-")
    work.mkdir()
    env = {**os.environ, "TMPDIR": str(work), "BENCH_DATA": str(work / "data")}
    cmd = [sys.executable, str(BENCH / smoke.script), *smoke.args]
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=work, env=env, text=True, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(proc)
        return "crashed", time.perf_counter() - start, f"timeout after {timeout:g} s"
    seconds = time.perf_counter() - start
    reason = crash_reason(smoke, proc.returncode, err)
    if reason is None:
        return "ok", seconds, ""
    tail = (out[-1500:] + "\n" + err[-3000:]).strip()
    return "crashed", seconds, f"{reason}\n{tail}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="+", metavar="NAME", help="these SMOKE entries only")
    p.add_argument("--timeout", type=float, default=60, help="seconds per bench")
    args = p.parse_args()
    unlisted = sorted({f.stem for f in BENCH.glob("bench_*.py")} - SMOKE.keys())
    names = args.only or list(SMOKE)
    crashed = [] if args.only else [f"{u} (no SMOKE entry in bench/smoke.py)" for u in unlisted]
    for line in crashed:
        print(f"{line.split()[0]:<26} {0:6.1f} s  crashed: no SMOKE entry in bench/smoke.py")
    total = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-smoke-") as tmp:
        for name in names:
            if name not in SMOKE:
                return p.error(f"no SMOKE entry {name!r}; known: {', '.join(SMOKE)}")
            verdict, seconds, detail = run_one(name, SMOKE[name], Path(tmp), args.timeout)
            head, _, rest = detail.partition("\n")
            print(f"{name:<26} {seconds:6.1f} s  {verdict}" + (f": {head}" if head else ""))
            if rest:
                print("    " + rest.replace("\n", "\n    "))
            if verdict == "crashed":
                crashed.append(f"{name} ({head})")
            sys.stdout.flush()
    print(f"bench smoke: {time.perf_counter() - total:.1f} s", end="")
    if crashed:
        print(f"; crashed: {'; '.join(crashed)}")
        return 1
    print("; no crashes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
