"""Preflight speed: `python bench/bench_preflight.py`.

Target (issue 7): `run --dry-run` with all rules on a NeMo-RL-sized config (the RLHF GenRM Gym
config, 300+ keys) and a 1,000-row data file in under 1 s wall. Measured as a subprocess (what a
user waits for), interleaved with `python -c pass` as the baseline, plus `preflight()` alone
in-process. The data, a stand-in NeMo-RL checkout and its Gym configs are generated in a temp dir.
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

from abort import abort

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 1.0
STEP = "rl/nemo_rl/rlhf"
CONFIG = "default"
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "STEPS_PATH")}
ENV["TORCH_CUDA_ARCH_LIST"] = "9.0"  # as NeMo-RL's container sets it (E-MEGATRON-ARCH-LIST)
AGENT = "genrm_simple_agent"


def make_inputs(tmp: Path, rows: int) -> tuple[Path, Path, Path]:
    """A 1,000-row Gym train file, a validation file, and a NeMo-RL checkout with Gym configs."""
    data = tmp / "data"
    data.mkdir()
    for name, n in (("train.jsonl", rows), ("val.jsonl", 50)):
        with (data / name).open("w") as fh:
            for i in range(n):
                q = f"What is {i} + {i * 3}? Explain each step before giving the answer."
                row = {
                    "responses_create_params": {"input": [{"role": "user", "content": q}]},
                    "agent_ref": {"type": "responses_api_agents", "name": AGENT},
                    "question": q,
                    "expected_answer": str(i * 4),
                }
                fh.write(json.dumps(row) + "\n")
    nemo_rl = tmp / "RL"
    for script in ("examples/run_grpo.py", "examples/nemo_gym/run_grpo_nemo_gym.py"):
        (nemo_rl / script).parent.mkdir(parents=True, exist_ok=True)
        (nemo_rl / script).write_text("")
    gym = nemo_rl / "3rdparty/Gym-workspace/Gym"
    model = gym / "responses_api_models/vllm_model/configs/vllm_model_for_training.yaml"
    server = gym / "resources_servers/genrm_compare/configs/genrm_compare.yaml"
    for p in (model, server):
        p.parent.mkdir(parents=True)
    model.write_text("policy_model:\n  responses_api_models:\n    vllm_model: {}\n")
    server.write_text(
        "genrm_compare:\n  resources_servers:\n    genrm_compare: {domain: rlhf}\n"
        f"{AGENT}:\n  responses_api_agents:\n    simple_agent: {{}}\n"
    )
    return data / "train.jsonl", data / "val.jsonl", nemo_rl


def wall(cmd: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, check=False)
    if proc.returncode != 0:  # a finding stops the run: not the path this bench times
        abort(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}")
    return time.perf_counter() - start, proc.returncode


def in_process(train: Path, val: Path, nemo_rl: Path, repeat: int) -> tuple[float, int, int]:
    """Median seconds of preflight() alone, the config's key count and the finding count."""
    sys.path.insert(0, str(REPO))
    from catalog.manifest import StepManifest
    from catalog.tomlfile import load_toml
    from runners.config.compiler import compile_config
    from runners.config.override_apply import all_keys
    from runners.preflight import PreflightContext, preflight

    step_dir = REPO / "steps" / STEP
    config = step_dir / "config" / f"{CONFIG}.yaml"
    manifest = StepManifest.model_validate(load_toml(step_dir / "step.toml"))
    compiled = compile_config(
        config, [f"data.train.data_path={train}", f"data.validation.data_path={val}"]
    )
    resolved = compiled.resolved()
    times, findings = [], []
    for _ in range(repeat):
        ctx = PreflightContext(
            step_id=STEP,
            manifest=manifest,
            config=resolved,
            config_file=config,
            compiled=compiled,
            nemo_rl_dir=nemo_rl,
        )
        start = time.perf_counter()
        findings = preflight(ctx)
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(all_keys(compiled.config)), len(findings)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rows", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        train, val, nemo_rl = make_inputs(tmp, args.rows)
        cmd = [
            sys.executable, "-m", "steps", "run", STEP, "-c", CONFIG, "--dry-run",
            "--input", f"train={train}", "--input", f"validation={val}",
            "--nemo-rl", str(nemo_rl), "--runs-dir", str(tmp / "runs"),
        ]  # fmt: skip
        base = [sys.executable, "-c", "pass"]
        wall(cmd), wall(base)  # warm-up: bytecode caches, as users run it
        runs, bases, codes = [], [], set()
        for _ in range(args.repeat):
            t, rc = wall(cmd)
            runs.append(t)
            codes.add(rc)
            bases.append(wall(base)[0])
        pf, keys, n_findings = in_process(train, val, nemo_rl, args.repeat)
    run_s, base_s = statistics.median(runs), statistics.median(bases)
    print(f"config keys: {keys}; data rows: {args.rows}; findings: {n_findings}")
    print(f"python -c pass          : {base_s * 1000:7.1f} ms")
    print(f"run --dry-run (all rules): {run_s * 1000:7.1f} ms  ({run_s / base_s:.1f}x baseline, "
          f"exit codes {sorted(codes)})")  # fmt: skip
    print(f"preflight() in-process : {pf * 1000:7.1f} ms")
    ok = run_s < TARGET_S
    print(f"target run --dry-run < {TARGET_S:.1f} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
