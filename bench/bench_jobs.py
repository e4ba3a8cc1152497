"""`jobs` over 50 cluster runs on 2 hosts: concurrent refresh (one round trip per host) vs serial.

Run: `python bench/bench_jobs.py`.

Target (issue 22): 50 runs on 2 hosts listed in < 2 s on the tests' lab. Brings up the tests'
one-node Slurm (tests/cluster/slurm-local.sh, with accounting when installed) and an sshd on
127.0.0.1 in a temp dir, queues 50 held jobs (they stay PENDING and use no CPU), and writes 50 run
dirs: half for this machine, half for the same Slurm over ssh (the second host). Then, in the
same run, it times the serial refresh (`refresh` of each run in turn, one round trip per run, as
`jobs` did before) against `refresh_all` (one round trip per host, hosts asked concurrently), and
the whole `python -m steps jobs` command as a user runs it; it prints medians and the ratio.
The jobs are PENDING, so `jobs` reads no progress for them (a running run costs two more round
trips, eight runs at a time; an ended run's progress is read once and kept in run.json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slurm_lab import REPO, slurm_lab

TARGET_S = 2.0


def write_runs(
    work: Path, env: dict, hosts: list[tuple[str, str | None, list[str]]], n: int
) -> None:
    """n held jobs, their run dirs spread over `hosts` (each a profile, its host and ssh options)
    and an env.toml of those profiles in `work` (a record is located by its profile)."""
    profiles = [f'[{name}]\nexecutor = "slurm"\nremote_dir = "{work}"\n'
                + (f"host = {json.dumps(host)}\nssh_options = {json.dumps(opts)}\n" if host else "")
                for name, host, opts in hosts]  # fmt: skip
    work.mkdir(parents=True, exist_ok=True)
    (work / "env.toml").write_text("\n".join(profiles), encoding="utf-8")
    for i in range(n):
        name = f"steps-bench-{i:03d}"
        out = subprocess.run(
            ["sbatch", "--hold", "--parsable", f"--job-name={name}", "--wrap", "true"],
            env=env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        job_id = out.strip().split(";")[0]
        profile, host, options = hosts[i % len(hosts)]
        run_dir = work / "runs" / "bench" / f"20260101T000000Z-{i:08d}"
        run_dir.mkdir(parents=True)
        job = {
            "executor": "slurm", "profile": profile, "host": host, "ssh_options": options,
            "remote_dir": str(work), "job_id": job_id, "job_name": name,
            "job_dir": str(run_dir), "log_path": f"{run_dir}/slurm-{job_id}.out",
            "batch_output": f"{run_dir}/slurm-{job_id}.out",
            "submitted_utc": f"2026-01-01T00:00:00.{i:06d}Z", "state": "PENDING",
            "exit_code": None,
        }  # fmt: skip
        (run_dir / "run.json").write_text(json.dumps({"step": "bench", "job": job}))


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    from cluster_fixtures import start_sshd, stop_sshd

    from runners.launch.jobs import job_runs, refresh_all
    from runners.launch.records import backend_for_job, job_of

    with tempfile.TemporaryDirectory() as tmp, slurm_lab(Path(tmp)) as lab:
        root = Path(tmp)
        conf = lab["SLURM_CONF"]
        os.environ["SLURM_CONF"] = conf
        pid_file = None
        try:
            host, options, pid_file = start_sshd(root / "sshd", conf)
            work = root / "work"
            write_runs(work, {**os.environ}, [("lab", None, []), ("ssh", host, options)], args.runs)
            runs = job_runs(work / "runs", cwd=work)
            assert len(runs) == args.runs

            def serial() -> None:
                for run_dir, data in runs:
                    job = job_of(data, run_dir)
                    backend_for_job(job).refresh(job)

            def concurrent() -> None:
                states = {j.state for j in refresh_all(runs)}
                assert states == {"PENDING"}, states

            cli = [sys.executable, "-m", "steps", "jobs"]
            env = {**os.environ, "PYTHONPATH": str(REPO)}

            def command() -> None:
                subprocess.run(cli, cwd=work, env=env, capture_output=True, check=True)

            serial_t, conc_t, cli_t = [], [], []
            for _ in range(args.repeat):
                serial_t.append(timed(serial))
                conc_t.append(timed(concurrent))
                cli_t.append(timed(command))
        finally:
            if pid_file is not None:
                stop_sshd(pid_file)
    s, c, w = (statistics.median(t) for t in (serial_t, conc_t, cli_t))
    print(f"{args.runs} runs on 2 hosts (this machine + ssh), median of {args.repeat}:")
    print(f"  serial refresh (one round trip per run): {s:.3f} s")
    print(f"  refresh_all (one per host, concurrent):  {c:.3f} s  ({s / c:.1f}x faster)")
    print(f"  `python -m steps jobs` wall:             {w:.3f} s; target < {TARGET_S} s")
    return 0 if w < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
