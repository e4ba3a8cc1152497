"""NeMo-RL's REAL ray.sub of every supported version, submitted by `run --batch` to a real Slurm.

One job per version, all running at once on a one-node Slurm of its own without GPU GRES (a
GPU is not shareable between jobs, and ray.sub runs its "no GRES" path there): Slurm, sbatch,
the ray.sub files from the session's fixtures (copied unmodified) and the Ray heads they start are
real; only pyxis is stood in for (tests/cluster/pyxis/srun, first on PATH: drops the container
flags and gives each step its own process view and /tmp/ray, as a container on an exclusive node
would). The example script is the recording stand-in. The jobs dump their environment
(v0.6.0 always, v0.7.0+ with RAY_SUB_DEBUG_ENV=1); planted secrets must reach the driver and be
found in no file the jobs wrote, nor in Slurm's own state.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_fixtures import (
    CLUSTER,
    NO_JUDGE,
    PYTHON,
    lab_down,
    lab_up,
    stand_in_checkout,
    wait_for,
)
from run_fixtures import REPO, clean_env, steps_cli

# Upstream's files stay outside this repo: the shared fixtures, or $STEPS_RAY_SUB_FIXTURES.
FIXTURES = Path(
    os.environ.get("STEPS_RAY_SUB_FIXTURES", REPO.parent / "shared" / "fixtures" / "nemo-rl")
)
VERSIONS = {"v060": "ray.sub.v0.6.0", "v070": "ray.sub.v0.7.0", "pin": "ray.sub.pin-7ea279ab"}
FORWARDED = ("WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY")
# Names with a secret word only as a substring, or with a switch value: settings for the job.
SETTINGS = {
    "NCCL_IB_PKEY": "0x8001",
    "TOKENIZERS_PARALLELISM": "false",
    "KEYTAB_PATH": "/etc/krb5.keytab",
    "HF_HUB_DISABLE_TOKEN": "1",
}


def _ports(base: int) -> dict[str, str]:
    """ray.sub's ports for one job (the head takes +1 of the node ports): a block of its own."""
    names = ("PORT", "RAY_CLIENT_SERVER_PORT", "DASHBOARD_PORT", "DASHBOARD_AGENT_LISTEN_PORT")
    out = {n: str(base + 2 * i) for i, n in enumerate(names)}
    node = ("NODE_MANAGER_PORT", "OBJECT_MANAGER_PORT", "RUNTIME_ENV_AGENT_PORT",
            "DASHBOARD_AGENT_GRPC_PORT", "METRICS_EXPORT_PORT")  # fmt: skip
    out |= {n: str(base + 11 + 2 * i) for i, n in enumerate(node)}
    return out | {"MIN_WORKER_PORT": str(base + 30), "MAX_WORKER_PORT": str(base + 79)}


def _profiles(root: Path, ray_tmp: dict[str, str]) -> str:
    """One profile per version: no account or partition (ray.sub's placeholders must not go)."""
    # Above Ray's default worker ports (10002-19999, which v0.6.0's head keeps), below ephemeral.
    base = random.randrange(20000, 32000, 300)
    text = f"""[base]
executor = "slurm"
time = "00:05:00"
container_image = "nvcr.io/nvidia/nemo-rl:v0.7.0"
mounts = ["{root}:{root}", "{REPO}:{REPO}"]
launcher = "{PYTHON}"
secrets = {json.dumps(list(FORWARDED))}
sbatch_args = ["--oversubscribe"]
"""
    for i, name in enumerate(VERSIONS):
        env = {
            "CPUS_PER_WORKER": "1",  # ray.sub's srun steps on a 2-CPU node (E-REMOTE-CPUS)
            "RAY_SUB_DEBUG_ENV": "1",
            "RAY_TMPDIR": ray_tmp[name],
            "FAKE_NEMO_RL_RECORD": f"{root}/{name}/record.json",
            "FAKE_EXPECT_SECRETS": " ".join([*FORWARDED, "HF_TOKEN"]),
            **_ports(base + 100 * i),
        }
        plain = ", ".join(f'{k} = "{v}"' for k, v in env.items())
        text += f"""
[{name}]
extends = "base"
remote_dir = "{root}/{name}/shared"
nemo_rl_dir = "{root}/{name}/RL"
env = {{ {plain} }}
"""
    return text


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def _files_holding(values: list[bytes], roots: list[Path], since: float) -> list[str]:
    """Every regular file under roots written since `since` that contains one of the values.
    One lstat a file (scandir's types, no Path objects): /tmp of a shared machine holds 10^5."""
    hits, seen, visited = [], 0, set()
    stack = [str(r) for r in reversed(roots) if r.is_dir()]
    files = [str(r) for r in roots if r.is_file() and r.stat().st_mtime >= since]
    while stack:
        folder = stack.pop()
        if folder in visited:
            continue  # a root under another root
        visited.add(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
                st = entry.stat(follow_symlinks=False)
                if st.st_mtime < since or st.st_size > 64 << 20:
                    continue
                with open(entry.path, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            seen += 1
            if any(v in data for v in values):
                hits.append(entry.path)
    for path in files:  # roots that are files (v0.6.0's scripts in /)
        seen += 1
        if any(v in Path(path).read_bytes() for v in values):
            hits.append(path)
    assert seen > 20, f"only {seen} files searched"
    return hits


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A real one-node Slurm without GPU GRES, so the three jobs share the node at once."""
    missing = [t for t in ("slurmctld", "slurmd", "sbatch", "unshare") if not shutil.which(t)]
    missing += [f for f in VERSIONS.values() if not (FIXTURES / f).is_file()]
    if not (Path(sys.executable).parent / "ray").exists():
        missing.append("ray (pip install -e '.[ray]')")
    if missing or os.geteuid() != 0:
        pytest.skip(f"needs root and {', '.join(missing)} (ray.sub fixtures: {FIXTURES})")
    lab = tmp_path_factory.mktemp("slurm-nogres")
    env = lab_up(lab, SLURM_LAB_GPUS="0", SLURM_LAB_ACCOUNTING="0")
    try:
        yield {"SLURM_CONF": str(lab / "etc" / "slurm.conf"), "lab": str(lab)}
    finally:
        lab_down(env)


@pytest.fixture
def real_lab(tmp_path, slurm, monkeypatch, capsys):
    ray_bin = Path(sys.executable).parent / "ray"
    ray_tmp = {n: f"/tmp/steps-rs-{n}-{secrets.token_hex(3)}" for n in VERSIONS}
    for name, fixture in VERSIONS.items():
        checkout = stand_in_checkout(tmp_path / name / "RL")
        shutil.copy(FIXTURES / fixture, checkout / "ray.sub")  # the real one, unmodified
    work = tmp_path / "work"
    work.mkdir()
    (work / "env.toml").write_text(_profiles(tmp_path, ray_tmp), encoding="utf-8")
    planted = {
        "WANDB_API_KEY": "wb" + secrets.token_hex(20),
        "AWS_SECRET_ACCESS_KEY": f"aws/{secrets.token_hex(12)}+'q\"$x",  # quotes survive
        "HF_TOKEN": "hf_" + secrets.token_hex(16),  # set here, not forwarded: reaches nothing
    }
    path = f"{CLUSTER / 'pyxis'}:{ray_bin.parent}:{os.environ['PATH']}"
    env = clean_env(tmp_path, SLURM_CONF=slurm["SLURM_CONF"], PATH=path, **planted, **SETTINGS,
                    **NO_JUDGE)  # fmt: skip
    env |= {"STEPS_OUTPUT": str(tmp_path / "out"), "STEPS_POLL_SECONDS": "0.3"}

    def cli(*argv: str):
        return steps_cli(monkeypatch, capsys, *argv, cwd=work, env=env)

    started = time.time()
    try:
        yield tmp_path, work, cli, planted, ray_tmp
    finally:
        for d in ray_tmp.values():
            shutil.rmtree(d, ignore_errors=True)
        for script in (Path("/launch-head.sh"), Path("/launch-worker.sh")):  # v0.6.0 writes to /
            if script.exists() and script.stat().st_mtime >= started - 1:
                script.unlink()


def test_the_real_ray_sub_of_every_version_gets_secrets_to_the_driver_and_nowhere_else(
    real_lab,
    slurm,
):
    root, _work, cli, planted, ray_tmp = real_lab
    conf = slurm["SLURM_CONF"]
    since = time.time() - 1
    dry = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", "v060", "--dry-run", "--json")
    launch = json.loads(dry.stdout)["launch"]
    # No account/partition in the profile: the cluster's default partition replaces ray.sub's
    # PARTITION placeholder (this lab has no accounting, so ACCOUNT is harmless and stays).
    assert "--partition=debug" in launch["sbatch"], launch["sbatch"]
    jobs = {}
    for name in VERSIONS:
        res = cli("run", "rl/nemo_rl/dpo", "-c", "tiny", "--batch", name, "--json")
        assert res.returncode == 0, res.stderr
        jobs[name] = json.loads(res.stdout)["job"]
    running = dict(jobs)

    def settled() -> bool:
        """Each job is cancelled once its driver has run (or it left the queue without): its
        Ray head would idle ~60 s more, asking `ray status` (~1.2 s of CPU) every 10 s."""
        for name, job in list(running.items()):
            if (root / name / "record.json").exists() or not _queued(conf, job["job_id"]):
                cli("cancel", job["job_id"])
                del running[name]
        return not running

    wait_for(settled, timeout=240, step=0.5)
    for name, job in jobs.items():
        assert (root / name / "record.json").exists(), f"{name}: no driver ran; " + _tail(job)
    for job in jobs.values():
        wait_for(lambda j=job: not _queued(conf, j["job_id"]), timeout=90)
    for name, job in jobs.items():
        rec = json.loads((root / name / "record.json").read_text())
        assert rec["secrets_present"] == {**dict.fromkeys(FORWARDED, True), "HF_TOKEN": False}
        assert rec["secrets_sha256"] == {n: _sha(planted[n]) for n in FORWARDED}, name
        assert set(SETTINGS) <= set(rec["env_names"]), name
        head = Path(job["job_dir"], f"{job['job_id']}-logs", "ray-head.log").read_text()
        assert "NCCL_IB_PKEY=0x8001" in head, name  # the environment was dumped
        assert not Path(job["job_dir"], ".steps-secrets.env").exists()
    searched = [
        root,
        *map(Path, ray_tmp.values()),
        Path(slurm["lab"]),
        Path("/tmp"),
        Path("/dev/shm"),
    ]
    searched += [p for p in (Path("/launch-head.sh"), Path("/launch-worker.sh")) if p.exists()]
    values = [v.encode() for v in planted.values()]
    assert _files_holding(values, searched, since) == []


def _queued(conf: str, job_id: str) -> str:
    """squeue's state for the job (COMPLETING while a step is still being killed); "" once gone."""
    argv = ["squeue", "-h", "-j", job_id, "-o", "%T"]
    out = subprocess.run(
        argv, capture_output=True, text=True, env={**os.environ, "SLURM_CONF": conf}
    )
    return out.stdout.strip()


def _tail(job: dict) -> str:
    out = Path(job["batch_output"])
    return out.read_text()[-3000:] if out.exists() else "(no batch output)"
