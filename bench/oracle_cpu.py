"""CPU oracle: `steps run --dry-run` judged by real NeMo-RL run on CPU up to its GPU boundary.

Why: our preflight promises that what passes trains and that what NeMo-RL runs gets no error
from us. Without a GPU, real NeMo-RL still does its whole driver-side setup (config and pydantic
MasterConfig, Ray, tokenizer, data, logger, checkpointing, placement, backend checks) and stops
at the first CUDA call. Each variant runs both ways:
  steps   `python -m steps run STEP -c CFG OVERRIDES --nemo-rl RL --launcher PY --dry-run --keep
          --json` (the upstream judge takes part: the launcher imports nemo_rl);
  NeMo-RL the exact argv steps would exec (examples/run_dpo.py / run_grpo.py on the run dir's
          config.yaml, cwd the checkout) against a private Ray head that advertises one fake GPU;
          when steps wrote no run dir, the step config's own compile plus the overrides on
          NeMo-RL's command line.
Verdicts: both_ok, true_positive (both refuse), false_error (steps refuses, NeMo-RL reaches the
boundary), missed (steps clean, NeMo-RL fails before the boundary). Not in CI (needs the
several-GB venv that bench/oracle_cpu.sh builds). Every config shipped under the listed steps'
config/ folders is a variant too (`ship-<step>-<config>`).

usage: python bench/oracle_cpu.py --nemo-rl RL --python VENV_PY [--model DIR] [--work DIR]
         [--variants bench/oracle_variants.yaml] [-j 2] [--only ID,ID] [--timeout 300]
         [--json OUT.json]
Exit: 0 no false error and no miss, 1 some, 2 setup.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from oracle_cpu_report import classify, describe, killed, read_log, table
from pydantic import BaseModel, ConfigDict

REPO = Path(__file__).resolve().parent.parent
# Findings about this CPU venv or checkout, not the config: not counted as a verdict. A Gym
# config path "does not exist under the Gym root" of a checkout without its Gym submodule, and
# the one finding that says the submodule is empty (steps reports it so since issue 38).
ENV_FINDINGS = (
    ("E-LAUNCHER", "requires-python"),
    ("E-PACKAGE-VERSION", "is not installed"),
    ("E-GYM-CONFIG-PATH", "the NeMo-Gym git submodule is not checked out"),
)
GYM_ROOT = re.compile(r"does not exist under the Gym root (\S+)")


def environment_finding(f: dict) -> bool:
    code, message = f.get("code"), f.get("message", "")
    if any(code == c and s in message for c, s in ENV_FINDINGS):
        return True
    root = GYM_ROOT.search(message) if code == "E-GYM-CONFIG-PATH" else None
    return bool(root) and not any(Path(root.group(1)).glob("*"))


class Variant(BaseModel):
    """One config to judge: a shipped config plus overrides, files and environment changes."""

    model_config = ConfigDict(extra="forbid")
    id: str
    step: str = "rl/nemo_rl/dpo"
    config: str = "tiny_dtensor"
    overrides: list[str] = []
    files: dict[str, str] = {}  # relative to the variant's folder {W}; placeholders apply
    copy_model: list[str] = []  # copies of the tiny model to break
    remove: list[str] = []
    env: dict[str, str] = {}
    env_unset: list[str] = []
    model: bool = True  # prepend policy.model_name / tokenizer.name = {MODEL}
    timeout: int | None = None
    gpus: int = 1  # fake GPUs its Ray head advertises (a head of its own when not 1)
    fails_after: str = ""  # where it fails just past the boundary on a GPU (file:line)
    why: str = ""


class VariantsFile(BaseModel):
    """bench/oracle_variants.yaml."""

    model_config = ConfigDict(extra="forbid")
    shipped_steps: list[str] = []
    shipped_overrides: dict[str, list[str]] = {}  # id glob -> overrides for shipped configs
    shipped_gpus: dict[str, int] = {}  # id glob -> fake GPUs (the config's cluster size)
    variants: list[Variant] = []


def load_variants(path: Path, tree: Path) -> list[Variant]:
    """The file's variants after one per config shipped under each listed step's config/."""
    doc = VariantsFile.model_validate(yaml.safe_load(path.read_text()) or {})
    shipped = []
    for step in doc.shipped_steps:
        for cfg in sorted((tree / "steps" / step / "config").glob("*.yaml")):
            vid = f"ship-{step.rsplit('/', 1)[-1]}-{cfg.stem}"
            extra = [o for pat, ovs in doc.shipped_overrides.items() if fnmatch.fnmatch(vid, pat)
                     for o in ovs]  # fmt: skip
            gpus = [n for pat, n in doc.shipped_gpus.items() if fnmatch.fnmatch(vid, pat)]
            shipped.append(
                Variant(
                    id=vid,
                    gpus=gpus[-1] if gpus else 1,
                    step=step,
                    config=cfg.stem,
                    overrides=extra,
                    why="a config we ship (with the inputs a user passes)",
                )
            )
    return shipped + doc.variants


def subst(text: str, ctx: dict[str, str]) -> str:
    for key, value in ctx.items():
        text = text.replace("{" + key + "}", value)
    return text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HeadFailed(Exception):
    """A private Ray head did not start (its log says why)."""


class RayHead:
    """A private loopback Ray head with one fake GPU, stopped by the pid this process started."""

    def __init__(self, python: str, folder: Path, env: dict[str, str], gpus: int = 1) -> None:
        self.port = free_port()
        folder.mkdir(parents=True, exist_ok=True)
        # Ray's temp dir holds its unix sockets (session_<date>_<pid>/sockets/plasma_store): a
        # deep work folder pushes that path past the 107 bytes a socket name may have and the
        # head never starts. A short private folder under /tmp holds them instead.
        self.temp = tempfile.mkdtemp(prefix="orc", dir="/tmp")
        base = 30000 + (self.port % 300) * 100  # a private worker-port range per head
        argv = [str(Path(python).parent / "ray"), "start", "--head", "--block",
                "--node-ip-address=127.0.0.1", f"--port={self.port}", f"--num-gpus={gpus}",
                f"--num-cpus={max(4, 2 * gpus)}", "--include-dashboard=false",
                "--disable-usage-stats",
                f"--temp-dir={self.temp}", "--object-store-memory=400000000",
                f"--node-manager-port={free_port()}", f"--object-manager-port={free_port()}",
                f"--dashboard-agent-listen-port={free_port()}",
                f"--dashboard-agent-grpc-port={free_port()}",
                f"--runtime-env-agent-port={free_port()}", f"--metrics-export-port={free_port()}",
                f"--ray-client-server-port={free_port()}",
                f"--min-worker-port={base}", f"--max-worker-port={base + 99}"]  # fmt: skip
        self.log = folder / "head.log"
        with open(self.log, "w") as fh:
            self.proc = subprocess.Popen(argv, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                         start_new_session=True)  # fmt: skip
        deadline = time.time() + 120
        while "Ray runtime started" not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise HeadFailed(f"oracle_cpu: the Ray head did not start; see {self.log}")
            time.sleep(1)
        self.address = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # `ray start --block` stops its own children
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the group this process created
                self.proc.wait()
        shutil.rmtree(self.temp, ignore_errors=True)


def worker_venvs(nemo_rl: Path, python: str, folder: Path) -> None:
    """NeMo-RL wants a uv-built venv per actor class; one whose bin/python exists is used as is."""
    registry = nemo_rl / "nemo_rl/distributed/ray_actor_environment_registry.py"
    for fqn in set(re.findall(r'"(nemo_rl\.[\w.]+\.[A-Z]\w+)"', registry.read_text())):
        (folder / fqn / "bin").mkdir(parents=True, exist_ok=True)
        wrapper = folder / fqn / "bin" / "python"
        wrapper.write_text(f'#!/bin/sh\nexec {python} "$@"\n')
        wrapper.chmod(0o755)


def prepare(v: Variant, wdir: Path, ctx: dict[str, str]) -> None:
    if wdir.exists():
        shutil.rmtree(wdir)
    wdir.mkdir(parents=True)
    for rel in v.copy_model:
        shutil.copytree(ctx["MODEL"], wdir / rel)
    for rel, content in v.files.items():
        (wdir / rel).parent.mkdir(parents=True, exist_ok=True)
        (wdir / rel).write_text(subst(content, ctx))
    for rel in v.remove:
        target = wdir / rel
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)


def key_of(override: str) -> str:
    return override.lstrip("+~").split("=", 1)[0]


def steps_argv(
    a: argparse.Namespace, v: Variant, config: str, overrides: list[str], runs: Path
) -> list[str]:
    return [a.steps_python, "-m", "steps", "run", v.step, "-c", config, *overrides,
            "--nemo-rl", str(a.nemo_rl), "--launcher", a.python, "--dry-run", "--keep",
            "--json", "--runs-dir", str(runs)]  # fmt: skip


def run_steps(argv: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    t0 = time.time()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        doc = {}
    errors = [f for f in doc.get("findings", []) if f.get("severity", "error") == "error"]
    env_errors = [f for f in errors if environment_finding(f)]
    cfg = [f for f in errors if f not in env_errors]  # fmt: skip
    return {
        "rc": proc.returncode, "seconds": round(time.time() - t0, 1),
        "codes": [f.get("code") for f in cfg],
        "findings": [f"{f.get('code')} {f.get('location') or ''}: {f.get('message', '')}"[:500]
                     for f in cfg],
        "warnings": sorted({f.get("code") for f in doc.get("findings", [])
                            if f.get("severity") == "warning"}),
        "env_codes": [f.get("code") for f in env_errors],
        "flags": bool(cfg) or proc.returncode not in (0, 1),
        "command": doc.get("command"), "cwd": doc.get("cwd"), "run_dir": doc.get("run_dir"),
        "stderr_tail": "" if doc else proc.stderr[-1500:],
    }  # fmt: skip


def run_nemo(argv: list[str], cwd: str, env: dict[str, str], log: Path, timeout: int) -> dict:
    t0 = time.time()
    with open(log, "w") as fh:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        try:
            rc, timed_out = proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)  # the group this process created
            try:
                rc = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
            timed_out = True
    return {
        "argv": argv, "rc": rc, "timed_out": timed_out, "seconds": round(time.time() - t0, 1),
        "log": str(log), **read_log(log.read_text(errors="replace")),
    }  # fmt: skip


class HeadPool:
    """One fake-GPU head per parallel slot: a shared head would let two runs share one GPU."""

    def __init__(self, heads: list[RayHead]) -> None:
        self.heads, self.free, self.lock = heads, list(heads), threading.Condition()

    def take(self) -> RayHead:
        with self.lock:
            self.lock.wait_for(lambda: bool(self.free))
            return self.free.pop()

    def give(self, head: RayHead) -> None:
        with self.lock:
            self.free.append(head)
            self.lock.notify()


def judge(a: argparse.Namespace, v: Variant, heads: HeadPool, env: dict[str, str]) -> dict:
    """Both verdicts on one variant. NeMo-RL attaches to a fake-GPU head (RAY_ADDRESS); steps
    sees a machine with that many GPUs (CUDA_VISIBLE_DEVICES), as on a real GPU box."""
    slot, own = heads.take(), None
    try:  # a head of its own that fails to start still gives the slot back
        if v.gpus != 1:
            own = RayHead(a.python, a.work / "ray-own" / v.id, env, v.gpus)
        return judge_on(a, v, env, (own or slot).address)
    except HeadFailed as exc:
        return {"id": v.id, "why": v.why, "steps": None, "nemo": None, "verdict": "not_run",
                "detail": str(exc)}  # fmt: skip
    finally:
        if own:
            own.stop()
        heads.give(slot)


def judge_on(a: argparse.Namespace, v: Variant, env: dict[str, str], address: str) -> dict:
    wdir = a.work / "v" / v.id
    ctx = {"W": str(wdir), "MODEL": str(a.model), "NEMO_RL": str(a.nemo_rl),
           "DATA": str(a.steps_dir / "steps" / v.step / "data"),
           "STEPCFG": str(a.steps_dir / "steps" / v.step / "config")}  # fmt: skip
    prepare(v, wdir, ctx)
    config = subst(v.config, ctx)
    venv = dict(env, STEPS_OUTPUT=str(wdir / "out"))
    venv.update({k: subst(x, ctx) for k, x in v.env.items()})
    for name in v.env_unset:
        venv.pop(name, None)
    mine = [subst(o, ctx) for o in v.overrides]
    base = [f"policy.model_name={a.model}", f"policy.tokenizer.name={a.model}"] if v.model else []
    overrides = [o for o in base if key_of(o) not in {key_of(m) for m in mine}] + mine
    gpus = dict(venv, CUDA_VISIBLE_DEVICES=",".join(str(i) for i in range(v.gpus)))
    sres = run_steps(steps_argv(a, v, config, overrides, wdir / "runs"), a.steps_dir, gpus)
    (wdir / "steps.json").write_text(json.dumps(sres, indent=1))
    if sres["run_dir"] and Path(sres["run_dir"], "config.yaml").is_file():
        argv, cwd, source = list(sres["command"]), sres["cwd"], "steps run dir"
    else:  # steps refused to write one: the base compile, the overrides on NeMo-RL's command line
        quiet = dict(gpus, STEPS_UPSTREAM_JUDGE_SECONDS="0")
        ref = run_steps(steps_argv(a, v, config, base, wdir / "ref-runs"), a.steps_dir, quiet)
        if not ref["run_dir"]:
            return {"id": v.id, "why": v.why, "steps": sres, "nemo": None, "verdict": "not_run"}
        argv = [*ref["command"], *mine]
        cwd, source = ref["cwd"], "base compile + overrides on NeMo-RL's command line"
    nres = run_nemo(argv, cwd, dict(venv, RAY_ADDRESS=address), wdir / "nemo.log",
                    v.timeout or a.timeout)  # fmt: skip
    nres["source"] = source
    nres["killed"] = killed(nres)
    verdict = classify(sres["flags"], nres["boundary"] is not None, v.fails_after, nres["killed"])
    return {"id": v.id, "step": v.step, "config": v.config, "overrides": v.overrides,
            "why": v.why, "fails_after": v.fails_after, "steps": sres, "nemo": nres,
            "verdict": verdict}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nemo-rl", type=Path, required=True, help="NeMo-RL checkout")
    ap.add_argument("--python", required=True, help="the venv python with NeMo-RL's packages")
    ap.add_argument("--model", type=Path, help="tiny HF model folder (default: made in --work)")
    ap.add_argument("--work", type=Path, help="scratch folder (default: a new temp folder)")
    ap.add_argument("--variants", type=Path, default=REPO / "bench" / "oracle_variants.yaml")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="variants in parallel (default 2)")
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated ids or globs, e.g. ship-*,dpo-tp2* (default: all)",
    )
    ap.add_argument("--timeout", type=int, default=300, help="seconds per NeMo-RL run")
    ap.add_argument("--json", type=Path, help="write the results here (default WORK/results.json)")
    ap.add_argument("--steps-python", default=sys.executable, help="python that runs steps")
    ap.add_argument(
        "--steps-dir", type=Path, default=REPO,
        help="the steps tree judged (default this repo; e.g. a `git archive HEAD` export)",
    )  # fmt: skip
    a = ap.parse_args()
    if not (a.nemo_rl / "examples" / "run_grpo.py").is_file():
        print(f"oracle_cpu: {a.nemo_rl} is not a NeMo-RL checkout", file=sys.stderr)
        return 2
    a.nemo_rl, a.steps_dir = a.nemo_rl.resolve(), a.steps_dir.resolve()
    a.work = (a.work or Path(tempfile.mkdtemp(prefix="oracle-cpu."))).resolve()
    a.work.mkdir(parents=True, exist_ok=True)
    only = {x for x in a.only.split(",") if x}
    variants = [
        v
        for v in load_variants(a.variants, a.steps_dir)
        if not only or any(fnmatch.fnmatch(v.id, pat) for pat in only)
    ]
    if not a.model:
        a.model = a.work / "model"
        if not (a.model / "config.json").is_file():
            tiny = [a.steps_python, str(REPO / "bench/tiny_qwen3.py"), str(a.model)]
            subprocess.run(tiny, check=True)
    a.model = a.model.resolve()
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONUNBUFFERED="1", WANDB_MODE=os.environ.get("WANDB_MODE", "disabled"),
               RAY_AUTH_MODE="disabled", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
               NEMO_RL_VENV_DIR=str(a.work / "venvs"),
               NEMO_RL_PY_EXECUTABLES_SYSTEM="1")  # fmt: skip
    env.pop("RAY_ADDRESS", None)
    env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")  # as NeMo-RL's container (lm_policy.py:121)
    probe = subprocess.run([a.python, "-c", "import nemo_rl"], cwd="/", env=env, check=False,
                           capture_output=True)  # fmt: skip
    if probe.returncode != 0:  # NeMo-RL used from the checkout, not installed in the venv
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(a.nemo_rl), env.get("PYTHONPATH")]))
    worker_venvs(a.nemo_rl, a.python, a.work / "venvs")
    jobs = max(1, min(a.jobs, len(variants)))
    heads: list[RayHead] = []
    try:
        for i in range(jobs):
            heads.append(RayHead(a.python, a.work / f"ray{i}", env))
    except HeadFailed as exc:
        for h in heads:
            h.stop()
        print(exc, file=sys.stderr)
        return 2
    print(f"oracle_cpu: {len(variants)} variants, {jobs} at a time, work {a.work}", flush=True)
    results: list[dict] = []
    try:
        pool = HeadPool(heads)
        with ThreadPoolExecutor(jobs) as ex:
            for r in ex.map(lambda v: judge(a, v, pool, env), variants):
                ours, theirs = describe(r)
                print(f"{r['id']}: {r['verdict']} | steps {ours} | nemo {theirs}", flush=True)
                results.append(r)
    finally:
        for h in heads:
            h.stop()
    out = a.json or a.work / "results.json"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps({"nemo_rl": str(a.nemo_rl), "results": results}, indent=1))
    tmp.replace(out)
    print(table(results))
    print(f"results: {out}")
    return 1 if any(r["verdict"] in ("false_error", "missed") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
