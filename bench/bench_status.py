"""`status` of a 20-segment run and `diagnose` throughput on a 1 GB driver log, on one core.

Run: `python bench/bench_status.py [--gb 1.0] [--repeat 5]`.

Targets (issue 23): `status` < 0.3 s; `diagnose` >= 300 MB/s on one core. The process pins
itself (and so its children: bash, grep) to one CPU first.

status: a run dir whose config, 20 checkpoints (`step_N` + a `tmp_step_*` leftover), a 64 MB
driver log of the current segment and a TensorBoard file sit in a temp dir, with 20 job records
(the segments); the current segment is a real job running on the tests' one-node Slurm
(bench/slurm_lab.py, started before the pinning), so `status` makes its real scheduler round trip.
Times `python -m steps status RUN` (a fresh process, as a user runs it) against `python -c pass`,
and the progress read alone (`run_progress`, in process).

diagnose: a generated NeMo-RL GRPO driver log (step banners, metrics, vLLM request lines, Ray
actor prefixes, `Generation KL Error` lines that mention "Error") with a GPU OOM traceback and
its consequences at the end. Times the scan as `diagnose` runs it (grep -F of every keyword, the
matching lines classified in Python) and the compiled-regex fallback, against `wc -l` and a plain
Python `for line in file` loop over the same file.
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

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from abort import abort  # noqa: E402

from runners.launch.observe import log_files, run_progress, scan_logs  # noqa: E402
from runners.monitor.classify import LogClassifier, diagnose  # noqa: E402
from runners.monitor.logscan import python_prefilter  # noqa: E402
from runners.rundir import JobRecord  # noqa: E402

STEP = (
    "\n========================= Step {k}/{m} =========================\n"
    "▶ Preparing batch...\n▶ Generating responses for batch of size 512...\n"
    "(VllmGenerationWorker pid=48211) INFO 11-24 12:00:{s:02d} [metrics.py:455] Avg prompt "
    "throughput: 1234.5 tokens/s, Avg generation throughput: 5678.9 tokens/s, Running: 64 reqs, "
    "Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 41.3%, CPU KV cache usage: 0.0%.\n"
    "(DTensorPolicyWorkerV2 pid=48305) /opt/nemo_rl_venv/lib/python3.12/site-packages/torch/"
    "distributed/fsdp/_fully_shard/_fsdp_param.py:812: UserWarning: resharding parameters\n"
    "▶ Processing rewards...,\n▶ Computing advantages...\n▶ Computing logprobs...\n"
    "▶ Training policy...\n\n📊 Training Results:\n  • Loss: 0.{a:04d}\n"
    "  • Generation KL Error: 0.0012\n  • Avg Reward: 0.{b:04d}\n"
    "  • Mean Generation Length: 512.0000\n\n⏱️  Timing:\n  • Total step time: 61.23s\n"
    "  • generation: 30.12s (49.2%)\n  • policy_training: 20.01s (32.7%)\n"
)
REQUEST = (
    "(VllmGenerationWorker pid=48211) INFO 11-24 12:00:00 [logger.py:39] Received request "
    "{k}-{i}: prompt: 'Solve the following math problem step by step', params: "
    "SamplingParams(n=1, temperature=1.0)\n"
)
FAILURE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/nemo-rl/nemo_rl/algorithms/grpo.py", line 1523, in grpo_train\n'
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::DTensorPolicyWorkerV2.get_logprobs() "
    "(pid=48305, ip=10.65.2.11)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.27 GiB.\n"
    "(DTensorPolicyWorkerV2 pid=48309) ray.exceptions.ActorDiedError: The actor died.\n"
)


def write_log(path: Path, size: int, fail: bool = True) -> int:
    """A driver log of about `size` bytes; returns its steps."""
    k = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write("\n========================= Epoch 1/1 =========================\n")
        while fh.tell() < size:
            k += 1
            fh.write(STEP.format(k=k, m=10**7, s=k % 60, a=k % 9999, b=(k * 7) % 9999))
            if k % 50 == 0:
                fh.write(f"Saving checkpoint for step {k}...\n")
            fh.write("".join(REQUEST.format(k=k, i=i) for i in range(20)))
        if fail:
            fh.write(FAILURE)
    return k


def _varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def tb_record(step: int, wall: float, tag: str, value: float) -> bytes:
    """One TFRecord holding an Event with one scalar (what SummaryWriter.add_scalar writes)."""
    import struct

    from runners.monitor.tfevents import masked_crc

    name = tag.encode()
    val = b"\x0a" + _varint(len(name)) + name + b"\x15" + struct.pack("<f", value)
    summary = b"\x0a" + _varint(len(val)) + val
    event = b"\x09" + struct.pack("<d", wall) + b"\x10" + _varint(step)
    event += b"\x2a" + _varint(len(summary)) + summary
    head = struct.pack("<Q", len(event))
    return head + struct.pack("<I", masked_crc(head)) + event + struct.pack("<I", masked_crc(event))


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def median_wall(fn, repeat: int, cpu: list[float] | None = None) -> float:
    """Median wall seconds of `fn`; `cpu` gets the median CPU seconds (this process and its
    children: on a shared, loaded machine the CPU time is the steadier figure)."""
    times, cpus = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), _cpu()
        fn()
        times.append(time.perf_counter() - start)
        cpus.append(_cpu() - start_cpu)
    if cpu is not None:
        cpu.append(statistics.median(cpus))
    return statistics.median(times)


def run(cmd: list[str], **kw) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        abort(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr}")


def bench_status(root: Path, repeat: int, lab: dict[str, str], job_id: str) -> None:
    run_dir = root / "runs" / "rl" / "nemo_rl" / "rlvr" / "20261124T000000Z-abcd1234"
    run_dir.mkdir(parents=True)
    ckpt, logs, shared = root / "ckpt", root / "logs", root / "shared"
    for n in range(1, 21):
        (ckpt / f"step_{n * 650}").mkdir(parents=True)
        info = {"epoch": 0, "step": n * 650, "total_steps": n * 650}
        (ckpt / f"step_{n * 650}" / "training_info.json").write_text(json.dumps(info))
    (ckpt / "tmp_step_13650").mkdir()
    tb = logs / "exp_020" / "tensorboard"
    tb.mkdir(parents=True)
    now = time.time()
    with (tb / "events.out.tfevents.1763950000.bench").open("wb") as fh:
        for step in range(1, 1001):
            wall = now - (1000 - step) * 61.2
            for tag in ("train/loss", "train/reward", "timing/train/total_step_time"):
                fh.write(tb_record(step, wall, tag, 61.2 if "time" in tag else step / 1000))
    jobs = []
    for seg in range(1, 21):
        (shared / f"{seg}-logs").mkdir(parents=True)
        jobs.append(
            {
                "executor": "slurm", "profile": "lab", "host": None, "job_id": str(seg),
                "job_dir": str(shared), "log_path": f"{shared}/{seg}-logs/ray-driver.log",
                "batch_output": f"{shared}/slurm-{seg}.out", "state": "TIMEOUT",
                "submitted_utc": f"2026-11-24T00:{seg:02d}:00.000000Z", "exit_code": 143,
            }
        )  # fmt: skip
    jobs[-1].update(state="RUNNING", job_id=job_id)
    steps = write_log(Path(jobs[-1]["log_path"]), 64 << 20, fail=False)
    config = {
        "grpo": {"max_num_steps": 20000, "max_num_epochs": 1},
        "checkpointing": {"checkpoint_dir": str(ckpt)},
        "logger": {"log_dir": str(logs), "tensorboard_enabled": True},
        "cluster": {"gpus_per_node": 8, "num_nodes": 4},
    }
    (run_dir / "resolved.yaml").write_text(json.dumps(config))
    record = {"step": "rl/nemo_rl/rlvr", "job": jobs[-1], "segments": jobs, "command_cwd": "/"}
    (run_dir / "run.json").write_text(json.dumps(record))
    # where job records run is read from the user's profile, never from run.json
    (root / "env.toml").write_text(f'[lab]\nexecutor = "slurm"\nremote_dir = "{shared}"\n')
    data = json.loads((run_dir / "run.json").read_text())
    records = [JobRecord.model_validate(job) for job in jobs]
    progress = run_progress(run_dir, data, records)
    cpu: list[float] = []
    in_process = median_wall(lambda: run_progress(run_dir, data, records), repeat, cpu)
    env = {**lab, "PYTHONPATH": str(REPO)}
    cli = [sys.executable, "-m", "steps", "status", str(run_dir)]
    run(cli, env=env, cwd=root)
    status = median_wall(lambda: run(cli, env=env, cwd=root), repeat, cpu)
    bare = median_wall(lambda: run([sys.executable, "-c", "pass"], env=env), repeat, cpu)
    print(f"status: {steps} steps in a 64 MB driver log, 20 segments, 20 checkpoints, TB file")
    print(f"  progress line: {progress.line()}")
    print(f"  {'':<31} {'wall ms':>8} {'CPU ms':>8}")
    for name, secs, cpus in (
        ("run_progress (in process)", in_process, cpu[0]),
        ("`steps status RUN` (a process)", status, cpu[1]),
        ("`python -c pass`", bare, cpu[2]),
    ):
        print(f"  {name:<31} {secs * 1000:8.1f} {cpus * 1000:8.1f}")
    print(f"  status / python -c pass: {status / bare:.1f}x wall, {cpu[1] / cpu[2]:.1f}x CPU")
    print("  target: status < 300 ms")


def bench_diagnose(root: Path, gb: float, repeat: int) -> None:
    job_dir = root / "job"
    (job_dir / "7-logs").mkdir(parents=True)
    log = job_dir / "7-logs" / "ray-driver.log"
    write_log(log, int(gb * 1e9))
    size = log.stat().st_size
    job = JobRecord.model_validate(
        {"executor": "slurm", "host": None, "job_id": "7", "log_path": str(log),
         "batch_output": str(job_dir / "slurm-7.out")}
    )  # fmt: skip

    def by_grep():
        classifier = LogClassifier()
        scan_logs(job, classifier)
        return diagnose(classifier, "FAILED", 1, "bench")

    def by_regex():
        classifier = LogClassifier()
        for path in log_files(job)[:1]:
            with open(path, "rb") as fh:
                for number, line in python_prefilter(fh):
                    classifier.feed(path, number, line)
        return diagnose(classifier, "FAILED", 1, "bench")

    def lines():
        with open(log, "rb") as fh:
            for _ in fh:
                pass

    got = by_grep()
    assert got.kind == "gpu_oom" and got.method == "DTensorPolicyWorkerV2.get_logprobs", got
    assert by_regex().kind == "gpu_oom"
    cpu: list[float] = []
    wc = median_wall(lambda: run(["wc", "-l", str(log)]), repeat, cpu)
    loop = median_wall(lines, max(1, repeat // 2), cpu)
    grep = median_wall(by_grep, repeat, cpu)
    regex = median_wall(by_regex, max(1, repeat // 2), cpu)
    mb = size / 1e6
    print(f"diagnose: {mb:.0f} MB driver log, named {got.kind} in {got.method}")
    print(f"  {'':<36} {'wall':>8} {'MB/s':>7}  {'CPU s':>6} {'MB/CPU-s':>8}  ratios (wall)")
    for name, secs, cpus in (
        ("diagnose scan (grep -F + classify)", grep, cpu[2]),
        ("fallback (compiled regex, chunks)", regex, cpu[3]),
        ("wc -l", wc, cpu[0]),
        ("python `for line in file`", loop, cpu[1]),
    ):
        per_cpu = f"{mb / cpus:8.0f}" if cpus else f"{'-':>8}"  # under the clock tick: small logs
        print(
            f"  {name:<36} {secs:6.2f} s {mb / secs:7.0f}  {cpus:6.2f} {per_cpu}  "
            f"{secs / wc:5.2f}x wc -l, {secs / loop:5.2f}x the line loop"
        )
    print("  target: >= 300 MB/s on one core")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gb", type=float, default=1.0, help="size of the generated log")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    from slurm_lab import slurm_lab

    with (
        tempfile.TemporaryDirectory() as tmp,
        slurm_lab(Path(tmp), SLURM_LAB_ACCOUNTING="0") as lab,
    ):
        sbatch = ["sbatch", "--parsable", "--wrap", "sleep 600", f"--output={tmp}/slurm-%j.out"]
        job_id = subprocess.run(sbatch, env=lab, check=True, capture_output=True, text=True)
        job_id = job_id.stdout.strip().split(";")[0]
        if hasattr(os, "sched_setaffinity"):  # the lab's daemons stay on every core
            os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        try:
            bench_status(Path(tmp) / "status", args.repeat, lab, job_id)
            bench_diagnose(Path(tmp) / "diagnose", args.gb, args.repeat)
        finally:
            subprocess.run(["scancel", job_id], env=lab, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
