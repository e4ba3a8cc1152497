"""Real cluster components for the launch tests: a one-node Slurm, an sshd on 127.0.0.1, a Ray head.

Each is session-scoped (brought up once, torn down at the end) and skips with the reason when
its packages are not installed (`.ci/run` installs them when it runs as root). NeMo-RL itself is
a stand-in checkout (`stand_in_checkout`): tests/cluster/ray.sub follows ray.sub's documented
contract, tests/cluster/driver.py stands in for the example scripts and records what it got.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from run_fixtures import clean_env

HERE = Path(__file__).resolve().parent
CLUSTER = HERE / "cluster"
SCRIPTS = ("examples/run_grpo.py", "examples/run_dpo.py", "examples/nemo_gym/run_grpo_nemo_gym.py")
# Lab tests about something else submit no upstream judge before a NeMo-RL job (a job each, on two
# cores); tests/test_upstream_judge_job.py is about it.
NO_JUDGE = {"STEPS_UPSTREAM_JUDGE_SECONDS": "0"}


def dry_run_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """clean_env with tests/cluster/dry-run-bin first on PATH: its sbatch satisfies the probe's
    `command -v sbatch` on a machine without Slurm, and fails the test if anything runs it."""
    env = clean_env(tmp_path, **extra)
    env["PATH"] = f"{CLUSTER / 'dry-run-bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stand_in_checkout(root: Path) -> Path:
    """A NeMo-RL checkout: the stand-in ray.sub at its root and recording example scripts."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(CLUSTER / "ray.sub", root / "ray.sub")
    for rel in SCRIPTS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CLUSTER / "driver.py", root / rel)
    return root


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A real slurmctld + slurmd (one node, GRES gpu:1), with slurmdbd and a private MariaDB when
    they are installed (`accounting`); yields SLURM_CONF for the clients."""
    missing = [t for t in ("slurmctld", "slurmd", "sbatch") if shutil.which(t) is None]
    if missing:
        pytest.skip(
            f"Slurm is not installed ({', '.join(missing)} missing): apt-get install "
            "slurmctld slurmd slurm-client"
        )
    lab = tmp_path_factory.mktemp("slurm")
    env = lab_up(lab, SLURM_LAB_GPUS="1")
    try:
        yield {
            "SLURM_CONF": str(lab / "etc" / "slurm.conf"),
            "lab": str(lab),
            # slurmdbd + MariaDB came up: `sacct` answers as on a real cluster
            "accounting": (lab / "run" / "accounting").exists(),
        }
    finally:
        lab_down(env)


LAB_SCRIPT = str(CLUSTER / "slurm-local.sh")


def lab_up(lab: Path, **knobs: str) -> dict[str, str]:
    """tests/cluster/slurm-local.sh up in `lab` on free ports (SLURM_LAB_* knobs on top); the
    environment `lab_down` takes. Tried once more from scratch on fresh ports before failing:
    a daemon may miss its start on busy cores, or another process take a port first."""
    for attempt in (1, 2):
        env = {**os.environ, "SLURM_LAB": str(lab)}
        for name in ("CTLD", "SLURMD", "DBD", "DB"):
            env[f"SLURM_LAB_{name}_PORT"] = str(free_port())
        env.update(knobs)
        up = subprocess.run(["bash", LAB_SCRIPT, "up"], env=env, capture_output=True, text=True)
        if up.returncode == 0:
            return env
        lab_down(env)
        if attempt == 2:
            pytest.fail(f"Slurm did not come up twice: {(up.stderr + up.stdout)[-3000:]}")
    raise AssertionError("unreachable")


def lab_down(env: dict[str, str]) -> None:
    subprocess.run(["bash", LAB_SCRIPT, "down"], env=env, capture_output=True, timeout=60)


def start_sshd(
    d: Path, slurm_conf: str, env: dict[str, str] | None = None
) -> tuple[str, list[str], Path]:
    """A real sshd on 127.0.0.1 with a throwaway key, configured in `d`; (host, ssh options, its
    pid file). Skips when OpenSSH is missing or sshd will not start here.

    A session's HOME is a fresh folder in `d` (a login node's plain account, as on a cluster),
    not this machine's: bash sources $HOME/.bashrc for every ssh command, and the lab
    machine's runs `pyenv init` (~0.15 s of CPU, ~60 times a suite), while the remote side's
    caches would land in the real home. `env` sets more variables (sshd's SetEnv)."""
    sshd_bin = shutil.which("sshd") or "/usr/sbin/sshd"
    if not Path(sshd_bin).exists() or shutil.which("ssh") is None:
        pytest.skip("OpenSSH server/client not installed: apt-get install openssh-server")
    d.mkdir(parents=True, exist_ok=True)
    for name in ("hostkey", "userkey"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True
        )
    shutil.copy(d / "userkey.pub", d / "authorized_keys")
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    (d / "home").mkdir(exist_ok=True)
    setenv = " ".join(f"{k}={v}" for k, v in {"HOME": str(d / "home"), **(env or {})}.items())
    port = free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'hostkey'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        f"PasswordAuthentication no\nPidFile {d / 'sshd.pid'}\nStrictModes no\nUsePAM no\n"
        f"AcceptEnv SLURM_CONF\nSetEnv {setenv}\n",
        encoding="utf-8",
    )
    options = [
        "-p", str(port), "-i", str(d / "userkey"),
        "-o", "StrictHostKeyChecking=no", "-o", f"UserKnownHostsFile={d / 'known_hosts'}",
        "-o", "LogLevel=ERROR", "-o", f"SetEnv=SLURM_CONF={slurm_conf}",
    ]  # fmt: skip
    restart_sshd(d, options)
    return "root@127.0.0.1", options, d / "sshd.pid"


def restart_sshd(d: Path, options: list[str]) -> None:
    """(Re)start the sshd configured in `d` and wait until it takes logins."""
    sshd_bin = shutil.which("sshd") or "/usr/sbin/sshd"
    proc = subprocess.run(
        [sshd_bin, "-f", str(d / "sshd_config"), "-E", str(d / "sshd.log")],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"sshd would not start here: {proc.stderr.strip()}")
    for _ in range(50):
        probe = subprocess.run(
            ["ssh", "-o", "BatchMode=yes", *options, "root@127.0.0.1", "true"],
            capture_output=True,
        )
        if probe.returncode == 0:
            return
        time.sleep(0.1)


def stop_sshd(pid_file: Path) -> None:
    """Stop an sshd we started and every connection it serves (its child processes): to the
    clients of those connections, the host is gone."""
    pid = pid_file.read_text().strip() if pid_file.exists() else ""
    if not pid.isdigit():
        return
    children = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", pid], capture_output=True, text=True
    ).stdout.split()
    for p in [pid, *children]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(p), 9)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory, slurm):
    """A real sshd on 127.0.0.1 with a throwaway key; yields (host, ssh_options)."""
    host, options, pid_file = start_sshd(tmp_path_factory.mktemp("sshd"), slurm["SLURM_CONF"])
    try:
        yield host, options
    finally:
        pid = pid_file.read_text().strip() if pid_file.exists() else ""
        if pid.isdigit():
            os.kill(int(pid), 15)


def wait_for(predicate, timeout: float = 60, step: float = 0.3):
    """Poll until predicate() is truthy; its value, or a failed test naming the timeout."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    pytest.fail(f"condition not met within {timeout} s")


def left_the_queue(env: dict[str, str], *job_ids: str, timeout: float = 90) -> None:
    """Wait until none of `job_ids` is queued, running or completing, asking squeue (one small
    process, milliseconds) every 0.3 s: the cheap wait before the one `status` (two remote
    probes and the CLI, ~0.3 s of CPU) that then asserts the end. Ids Slurm forgot are gone."""
    squeue = ["squeue", "-h", "-t", "PD,R,CG,S,CF", "-o", "%i", "-j", ",".join(job_ids)]

    def gone() -> bool:
        out = subprocess.run(squeue, env=env, capture_output=True, text=True)
        return out.returncode != 0 or not out.stdout.strip()

    wait_for(gone, timeout=timeout)


def log_says(path: str | Path, text: str) -> bool:
    """Whether the job's log (a file on the lab's shared storage) holds `text` yet: the cheap
    wait before `logs`, which starts a remote probe each time it is asked."""
    try:
        return text in Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def read_until(stream, marker: str, timeout: float = 60) -> str:
    """What a child wrote on a pipe up to (at least) the first `marker`: the event a test waits
    on instead of sleeping. Reads the raw fd, as `communicate()` does for the rest."""
    got = bytearray()
    seen = threading.Event()

    def pump() -> None:
        while marker.encode() not in got:
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                break
            got.extend(chunk)
        seen.set()

    threading.Thread(target=pump, daemon=True).start()
    text = got.decode(errors="replace") if seen.wait(timeout) else ""
    if marker not in text:
        pytest.fail(f"{marker!r} not printed within {timeout} s; printed: {bytes(got)!r}")
    return text


PYTHON = sys.executable


RAY_SECRET = "raysecret0123456789abcdef0123456789abcd"


@pytest.fixture(scope="module")
def ray_head(request, tmp_path_factory):
    """A real local Ray head (1 CPU, 2 fake GPUs, the Jobs API); yields its dashboard URL.

    One head for the whole pytest session (a head costs ~10 CPU-seconds to start on these two
    cores, and its daemons' CPU is counted in no test): the first xdist worker that asks starts
    it under a file lock and records it in the folder all workers share; the others reuse it.
    The last test file that uses it stops it as it ends (each file runs in one worker), so it
    does not idle through the rest of the session; whatever is still running then, the
    controller stops once at session end (conftest's pytest_sessionfinish calls
    `stop_shared_ray_head`). The head's own environment holds WANDB_API_KEY: a Ray job reads
    secrets from the cluster.
    """
    ray_bin = Path(sys.executable).parent / "ray"
    if not ray_bin.exists():
        pytest.skip("ray is not installed: pip install -e '.[ray]'")
    shared = _shared_dir(tmp_path_factory.getbasetemp())
    with _locked(shared / "ray-head.lock"):
        head = _head_record(shared)
        if head is None or not _running(head["pid"]):
            done = head["done"] if head else []
            head = _start_ray_head_retrying(ray_bin) | {"done": done}
            (shared / "ray-head.json").write_text(json.dumps(head))
    yield head["url"]
    # Whole files go to one worker (loadfile, loadscope, or no xdist): a file's end is final.
    if getattr(request.config.option, "dist", "no") not in ("no", "loadfile", "loadscope"):
        return
    users = {str(i.path) for i in request.session.items if "ray_head" in i.fixturenames}
    with _locked(shared / "ray-head.lock"):
        head = _head_record(shared)
        if head is not None:
            head["done"] = sorted({*head["done"], str(request.path)})
            if users <= set(head["done"]):
                (shared / "ray-head.json").unlink()
                _stop_ray_head(head)
            else:
                (shared / "ray-head.json").write_text(json.dumps(head))


def _shared_dir(basetemp: Path) -> Path:
    """The folder every process of this session sees: under xdist, the controller's basetemp
    (each worker's is a folder inside it); without xdist, the process's own."""
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def _head_record(shared: Path) -> dict | None:
    state = shared / "ray-head.json"
    return json.loads(state.read_text()) if state.exists() else None


def stop_shared_ray_head(basetemp: Path) -> None:
    """Stop the session's shared head, if a worker started one (called once, by the process
    that owns `basetemp`: the controller under xdist, the only process without)."""
    if not (basetemp / "ray-head.lock").exists():
        return
    with _locked(basetemp / "ray-head.lock"):
        head = _head_record(basetemp)
        if head is not None:
            (basetemp / "ray-head.json").unlink()
            _stop_ray_head(head)


RAY_TOKEN = "raytoken5f0c2e9a7d4b4c1e8a6f3b2d9c7e1a05"


@pytest.fixture(scope="module")
def ray_token_head():
    """A real local Ray head with token authentication (RAY_AUTH_MODE=token, the token in its
    environment); yields {url, token}. One per test module that asks: tests put the token where
    Ray's client looks (a sandboxed HOME's ~/.ray/auth_token) or leave it out."""
    ray_bin = Path(sys.executable).parent / "ray"
    if not ray_bin.exists():
        pytest.skip("ray is not installed: pip install -e '.[ray]'")
    from importlib.metadata import version

    from packaging.version import Version

    if Version(version("ray")) < Version("2.52"):
        pytest.skip(f"Ray {version('ray')} has no token authentication (Ray 2.52 added it)")
    head = _start_ray_head_retrying(ray_bin, token=RAY_TOKEN)
    try:
        yield {"url": head["url"], "token": RAY_TOKEN}
    finally:
        _stop_ray_head(head)


@contextlib.contextmanager
def _locked(path: Path):
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _start_ray_head_retrying(ray_bin: Path, tries: int = 3, token: str | None = None) -> dict:
    """A head that exits while starting is started again on fresh ports: on two busy cores its
    GCS can miss Ray's own start-up deadline (`Failed to get node info ... Deadline Exceeded`),
    as ray.sub's own retries of `ray start` allow for on a cluster."""
    for attempt in range(1, tries + 1):
        try:
            return _start_ray_head(ray_bin, token)
        except HeadExited as exc:
            if attempt == tries:
                pytest.fail(f"the Ray head exited {tries} times while starting: {exc}")
    raise AssertionError("unreachable")


class HeadExited(Exception):
    """`ray start --head` ended before its head was ready (its log's tail)."""


# Ray's own settings (Ray 2.5x) that the tests' heads do without, ~1 CPU-second less a head and
# a third less while it idles: no worker prestarted for a first driver (a job's supervisor
# needs one of its own runtime env anyway), no metrics recorded or exported, the dashboard's
# node reporter and metrics loop once a minute, no event-loop or task-event bookkeeping.
LIGHT_HEAD = {
    "RAY_prestart_worker_first_driver": "0",
    "RAY_enable_metrics_collection": "0",
    "RAY_metrics_report_interval_ms": "60000",
    "RAY_event_stats": "0",
    "RAY_task_events_report_interval_ms": "0",
    "REPORTER_UPDATE_INTERVAL_MS": "60000",
    "METRICS_RECORD_INTERVAL_S": "60",
}


@functools.cache
def _without_log_monitor() -> list[str]:
    """`--include-log-monitor=false` where this Ray's `ray start` has it (2.40, the floor of the
    `ray` extra, has not), read from its source rather than a second `ray start --help`."""
    import importlib.util

    spec = importlib.util.find_spec("ray")
    scripts = Path(spec.origin).parent / "scripts" / "scripts.py" if spec and spec.origin else None
    known = scripts is not None and "--include-log-monitor" in scripts.read_text(encoding="utf-8")
    return ["--include-log-monitor=false"] if known else []


def _start_ray_head(ray_bin: Path, token: str | None = None) -> dict:
    """`ray start --head --block` in a session of its own; {url, pid, dir} once it is ready.
    With `token`, the head runs with Ray's token authentication (RAY_AUTH_MODE=token)."""
    import tempfile
    import urllib.request

    # Ray's socket paths must stay under 107 bytes: a short folder, not pytest's deep tmp.
    d = Path(tempfile.mkdtemp(prefix="steps-ray-", dir="/tmp"))
    port = free_port()
    env = {
        **os.environ,
        "PATH": f"{ray_bin.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "RAY_JOB_START_TIMEOUT_SECONDS": "30",
        "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
        "WANDB_API_KEY": RAY_SECRET,
        **LIGHT_HEAD,
    }
    for name in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"):
        env.pop(name, None)
    if token:
        env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
    with (d / "head.log").open("w") as log:
        proc = subprocess.Popen(
            [str(ray_bin), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
             f"--port={free_port()}", "--num-cpus=1", "--num-gpus=2", "--include-dashboard=true",
             "--dashboard-host=127.0.0.1", f"--dashboard-port={port}", "--disable-usage-stats",
             # Every port Ray would otherwise take by default: another head may hold it.
             f"--dashboard-agent-listen-port={free_port()}",
             f"--dashboard-agent-grpc-port={free_port()}", f"--metrics-export-port={free_port()}",
             f"--runtime-env-agent-port={free_port()}", f"--ray-client-server-port={free_port()}",
             f"--temp-dir={d / 'tmp'}",
             # Neither an autoscaler for one fixed node nor the log monitor (it streams workers'
             # output to `ray.init` drivers; the Jobs API reads a job's log file itself): ~3
             # CPU-seconds less a head, and less while it idles.
             "--no-monitor", *_without_log_monitor()],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    head = {"url": f"http://127.0.0.1:{port}", "pid": proc.pid, "dir": str(d)}
    auth = {"Authorization": f"Bearer {token}"} if token else {}

    def ready() -> bool:
        """The Jobs API answers and the head node is registered with its GPUs."""
        try:
            nodes_url = urllib.request.Request(f"{head['url']}/api/v0/nodes", headers=auth)
            body = urllib.request.urlopen(nodes_url, timeout=2).read()
            nodes = json.loads(body)["data"]["result"]["result"]
            return any(n["state"] == "ALIVE" and n["resources_total"].get("GPU") for n in nodes)
        except (OSError, ValueError, KeyError):
            return proc.poll() is not None

    try:
        wait_for(ready, timeout=90, step=0.2)
    except BaseException:
        _stop_ray_head(head)
        raise
    if proc.poll() is not None:
        log_text = (d / "head.log").read_text()[-2000:]
        shutil.rmtree(d, ignore_errors=True)
        raise HeadExited(log_text)
    return head


def _stop_ray_head(head: dict) -> None:
    """SIGTERM to `ray start --block` (it stops what it started), then SIGKILL to whatever is
    left of its session after 30 s: the process may belong to another worker (or to none, once
    that worker has ended), so it is watched through /proc, not waited for."""
    pid = head["pid"]
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + 30
    while time.monotonic() < end and _running(pid):
        time.sleep(0.1)
    for member in _session_members(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    shutil.rmtree(head["dir"], ignore_errors=True)


def _session_members(sid: int) -> list[int]:
    """The processes of session `sid` (`ray start` is its leader; Ray's daemons and workers
    may sit in process groups of their own within it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[3]) == sid:
                    found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie (a worker's own exited child stays a zombie until reaped)."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@contextlib.contextmanager
def controller_stopped(slurm: dict):
    """The lab's slurmctld stopped (slurmd, slurmdbd and running jobs stay up), then started
    again on its saved state and waited for: a controller outage as a user meets it."""
    lab = Path(slurm["lab"])
    pid = int((lab / "run" / "slurmctld.pid").read_text().strip())
    os.kill(pid, 15)
    wait_for(lambda: not _running(pid), timeout=30, step=0.1)  # a zombie has stopped
    env = {**os.environ, "SLURM_CONF": slurm["SLURM_CONF"]}
    try:
        yield
    finally:
        subprocess.run(["slurmctld", "-i", "-f", slurm["SLURM_CONF"]], env=env, check=True)
        wait_for(
            lambda: subprocess.run(["squeue", "-h"], env=env, capture_output=True).returncode == 0,
            timeout=60,
            step=0.2,
        )


class Relay:
    """A TCP relay to a real server (http://host:port): it passes everything on, except the
    answers to requests starting with `drop_answers_to` (the network losing a reply after the
    server acted on the request); `cut()` closes every connection and refuses new ones (the
    link gone), as it does by itself once an answer with `cut_after` in it has passed."""

    def __init__(
        self, upstream: str, drop_answers_to: bytes | None = None, cut_after: bytes | None = None
    ) -> None:
        import socketserver
        import threading
        from urllib.parse import urlsplit

        target = urlsplit(upstream)
        self.sockets: list[socket.socket] = []
        relay = self

        def pump(src: socket.socket, dst: socket.socket | None, answers: bool = False) -> None:
            with contextlib.suppress(OSError):
                while chunk := src.recv(65536):
                    if dst is not None:
                        dst.sendall(chunk)
                    if answers and cut_after is not None and cut_after in chunk:
                        relay.cut()
                        return
            if dst is not None:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                client = self.request
                with socket.create_connection((target.hostname, target.port)) as server:
                    relay.sockets += [client, server]
                    first = client.recv(65536)
                    server.sendall(first)
                    drop = drop_answers_to is not None and first.startswith(drop_answers_to)
                    back = threading.Thread(
                        target=pump, args=(server, None if drop else client, True), daemon=True
                    )
                    back.start()
                    pump(client, server)
                    back.join(timeout=30)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def cut(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()


def bare_python_bin(folder: Path) -> Path:
    """`folder` with a `python3` link to an interpreter that has nothing of ours and no pydantic
    (the system's, else a pyenv one; of the test Python's version first, so the stand-in
    container's packages load in it): first on a job's PATH, it is what a user's cluster has."""
    found = _bare_python()
    if found is None:
        pytest.skip("no python3 without pydantic here (/usr/bin/python3 or a pyenv one)")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "python3").symlink_to(found)
    return folder


@functools.cache  # a fact of the machine: one interpreter start per candidate, once a worker
def _bare_python() -> str | None:
    import glob

    probe = (
        "import importlib.util as u, sys; print(sys.version_info < (3, 8) or any("
        "u.find_spec(m) for m in ('pydantic', 'steps', 'runners', 'catalog')), "
        f"sys.version_info[:2] == {tuple(sys.version_info[:2])})"
    )
    found = []  # (not of the test Python's version, rank, path) of each bare one
    candidates = ["/usr/bin/python3", *glob.glob("/root/.pyenv/versions/3.*/bin/python3")]
    for rank, p in enumerate(candidates):
        if not os.path.exists(p):
            continue
        said = subprocess.run([p, "-I", "-c", probe], capture_output=True, text=True).stdout
        if said.split() and said.split()[0] == "False":  # bare (and it ran)
            found.append((said.split()[-1] != "True", rank, p))
    return min(found)[2] if found else None


def container_site() -> str:
    """The test Python's site-packages: what the pyxis stand-in gives a "container" step
    (PYXIS_STAND_IN_SITE), as NeMo-RL's image holds pydantic, PyYAML, omegaconf..."""
    import sysconfig

    return sysconfig.get_paths()["purelib"]
