"""Pipeline speed vs `python -c pass` in the same run: `python bench/bench_pipeline.py`.

Targets (issue 6): `plan` of a 20-stage pipeline under 0.3 s wall; `pipeline run` of a completed
pipeline under 1 s and doing no step work. With `--cluster` (issue 32): `pipeline run --batch` of
a three-stage pipeline on the tests' one-node Slurm under 1 s more than three bare `sbatch`
calls. The 20-stage pipeline is rl_prep then ten chained RLVR stages, each taking the previous
one's checkpoint as its policy, so the planner inserts nine Megatron -> HF converters. The re-run
uses the tiny RLVR example against stand-in NeMo-RL and Megatron-Bridge scripts (the test
suite's), run once first so every stage is completed.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from abort import abort

REPO = Path(__file__).resolve().parent.parent
PLAN_TARGET_S = 0.3
RERUN_TARGET_S = 1.0
CLUSTER_TARGET_S = 1.0  # issue 32: a three-stage cluster pipeline's overhead over bare sbatch
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "STEPS_PATH")}
ENV["TORCH_CUDA_ARCH_LIST"] = "9.0"  # as NeMo-RL's container sets it (E-MEGATRON-ARCH-LIST)


def twenty_stages(path: Path) -> Path:
    blend = REPO / "steps" / "data_prep" / "rl_prep" / "data" / "blend_tiny.yaml"
    lines = [
        "name: bench-20",
        "inputs:",
        f"  blend: {{type: data_blend, path: {blend}}}",
        "  policy: {type: hf_checkpoint, path: Qwen/Qwen3-0.6B}",
        "stages:",
        "  - {id: prep, step: data_prep/rl_prep, config: tiny, inputs: {blend: inputs.blend}}",
    ]
    prev = "inputs.policy"
    for i in range(1, 11):
        lines.append(
            f"  - {{id: rlvr{i}, step: rl/nemo_rl/rlvr, config: nemo_gym_tiny, inputs: "
            f"{{train: prep.data, validation: prep.data, policy: {prev}}}}}"
        )
        prev = f"rlvr{i}.checkpoint"
    lines += [
        "converters: {convert/megatron_to_hf: {config: tiny}}",
        "targets: [rlvr10.checkpoint]",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def wall(cmd: list[str], env: dict, cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, proc


def median_pair(cmd, base, repeat, env, cwd) -> tuple[float, float, subprocess.CompletedProcess]:
    """Median wall of `cmd` and of `base`, interleaved, after one warm-up each."""
    wall(cmd, env, cwd), wall(base, env, cwd)
    a, b, last = [], [], None
    for _ in range(repeat):
        t, last = wall(cmd, env, cwd)
        a.append(t)
        b.append(wall(base, env, cwd)[0])
    return statistics.median(a), statistics.median(b), last


def cluster(repeat: int) -> int:
    """`pipeline run --batch` of the tests' three-stage pipeline (rl_prep -> RLVR -> DCP to HF,
    every stage forced: planned, checked, probed once per profile, three jobs queued) beside
    three bare `sbatch --wrap true` calls chained with afterok, on the tests' one-node Slurm."""
    sys.path[:0] = [str(REPO / "bench"), str(REPO / "tests")]
    from slurm_lab import slurm_lab
    from test_pipeline_slurm import make_lab

    with tempfile.TemporaryDirectory() as tmp, slurm_lab(Path(tmp)) as lab:
        work, env = make_lab(Path(tmp), lab["SLURM_CONF"])
        # A fresh root per run: a stage run again while its previous job still runs is refused.
        roots = iter(range(1_000))

        def ours() -> list[str]:
            root = f"--root=bench-{next(roots)}"
            cmd = [sys.executable, "-m", "steps", "pipeline", "run", "lab3.yaml", "--batch", "gpu"]
            return [*cmd, root, *(f"--force={s}" for s in ("prep", "rlvr", "convert"))]

        sbatch = ["sbatch", "--parsable", "--partition=debug", "--oversubscribe"]

        def bare() -> float:
            start, after = time.perf_counter(), []
            for _ in range(3):
                dep = [f"--dependency=afterok:{after[-1]}"] if after else []
                proc = subprocess.run([*sbatch, *dep, "--wrap", "true"], cwd=work, env=env,
                                      capture_output=True, text=True, check=True)  # fmt: skip
                after.append(proc.stdout.strip().split(";")[0])
            return time.perf_counter() - start

        wall(ours(), env, work)  # warm caches (catalog manifest cache, page cache)
        steps_t, bare_t = [], []
        for _ in range(repeat):
            t, proc = wall(ours(), env, work)
            if proc.returncode != 0 or "3 of 3 stages queued" not in proc.stdout:
                abort(f"pipeline run --batch failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
            steps_t.append(t)
            bare_t.append(bare())
    a, b = statistics.median(steps_t), statistics.median(bare_t)
    ok = a - b < CLUSTER_TARGET_S
    low = min(steps_t)
    print(f"pipeline run --batch, 3 stages: median {a:.3f} s over {repeat} (min {low:.3f})")
    print(f"3 x sbatch --wrap true (afterok): median {b:.3f} s (min {min(bare_t):.3f})")
    print(
        f"overhead: {a - b:.3f} s ({a / b:.1f}x the bare sbatch calls); target < "
        f"{CLUSTER_TARGET_S} s more  {'ok' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="runs per command")
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="instead: planning+submit of a three-stage pipeline on the tests' Slurm (issue 32)",
    )
    args = parser.parse_args()
    if args.cluster:
        return cluster(max(1, min(args.repeat, 5)))
    py = sys.executable
    base = [py, "-c", "pass"]
    print(
        f"bench_pipeline (python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
        f"median of {args.repeat})"
    )
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        env = {**ENV, "STEPS_CACHE_DIR": str(tmp_path / "cache")}

        pipe = twenty_stages(tmp_path / "bench20.yaml")
        t, t0, proc = median_pair(
            [py, "-m", "steps", "plan", str(pipe), "--root", str(tmp_path / "r20")],
            base,
            args.repeat,
            env,
            tmp_path,
        )
        stages = sum(1 for ln in proc.stdout.splitlines() if re.match(r"^\s+\d+\. ", ln))
        if proc.returncode != 0 or stages != 20:
            abort(f"plan: exit {proc.returncode}, {stages} of 20 stages:\n{proc.stderr[-3000:]}")
        ok = t < PLAN_TARGET_S
        failed |= not ok
        print(
            f"plan, {stages} stages        {t * 1000:7.1f} ms  (python -c pass {t0 * 1000:.1f} ms, "
            f"x{t / t0:.1f})  target < {PLAN_TARGET_S * 1000:.0f} ms  {'ok' if ok else 'MISSED'}"
        )

        sys.path.insert(0, str(REPO / "tests"))
        from pipeline_toys import stand_ins

        nemo, bridge = stand_ins(tmp_path / "upstream")
        log = tmp_path / "trainings.log"
        env = {**env, "MEGATRON_BRIDGE_HOME": str(bridge), "FAKE_NEMO_RL_LOG": str(log)}
        cmd = [
            py,
            "-m",
            "steps",
            "pipeline",
            "run",
            str(REPO / "pipelines" / "tiny_rlvr.yaml"),
            "--root",
            str(tmp_path / "rlvr"),
            "--nemo-rl",
            str(nemo),
        ]
        first, proc = wall(cmd, env, tmp_path)
        if proc.returncode != 0:
            abort(f"pipeline run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        t, t0, proc = median_pair(cmd, base, args.repeat, env, tmp_path)
        cached = proc.stdout.count(": cached (")
        trainings = len(log.read_text().splitlines())
        if proc.returncode != 0 or cached != 3 or trainings != 1:
            abort(f"re-run: exit {proc.returncode}, {cached}/3 cached, step work {trainings - 1}")
        ok = t < RERUN_TARGET_S
        failed |= not ok
        print(
            f"re-run, completed       {t * 1000:7.1f} ms  (python -c pass {t0 * 1000:.1f} ms, "
            f"x{t / t0:.1f})  target < {RERUN_TARGET_S * 1000:.0f} ms  {'ok' if ok else 'MISSED'}"
            f"  [{cached}/3 cached, step work {trainings - 1}; first run {first:.2f} s]"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
