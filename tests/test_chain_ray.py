"""`run --run RAY_PROFILE --until-done` on a real local Ray head: this process drives the chain.

Real: the Ray head, its Jobs API, Ray's Job SDK. NeMo-RL is the stand-in (tests/cluster/driver.py)
that trains fake steps as NeMo-RL does (tmp_step_N -> step_N with training_info.json, stops at
checkpoint_must_save_by with exit 0, resumes from the latest step_N, fails on request) and
appends every trained step to a ledger. A Ray job has no time limit: the user's
checkpoint_must_save_by of one second ends each segment. The module's fixture drives the chains
once, each test then reads its own: one chain driver is a child process (a second command is
refused while it runs; Ctrl-C reaches it as SIGINT), the others run in this process (the
`python -m steps` children they replace each paid Ray's import, ~1.2 s of CPU).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from cluster_fixtures import (  # noqa: F401
    NO_JUDGE,
    PYTHON,
    ray_head,
    stand_in_checkout,
    wait_for,
)
from run_fixtures import REPO, CliResult, clean_env, steps_cli, steps_here

DPO = "rl/nemo_rl/dpo"
DATA = REPO / "steps" / "rl" / "nemo_rl" / "dpo" / "data"
DEADLINE = "checkpointing.checkpoint_must_save_by=00:00:00:01"
NCCL_TIMEOUT = (
    "[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=12, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out."
)
CHAINS = {  # name: (the stand-in's knobs, overrides)
    "completes": ({"FAKE_STEP_SECONDS": "0.3"}, ["dpo.max_num_steps=6"]),
    "deterministic": (
        {"FAKE_STEP_SECONDS": "0.1", "FAKE_FAIL_AT_STEP": "2", "FAKE_FAIL_LOG": NCCL_TIMEOUT},
        ["dpo.max_num_steps=6", "checkpointing.save_period=1"],
    ),
    # Holds before step 2 until the test has pressed Ctrl-C on the driver.
    "detached": ({"FAKE_STEP_SECONDS": "0.1", "FAKE_WAIT_AT_STEP": "2"}, ["dpo.max_num_steps=4"]),
    # Detached like the one above, then run again while its segment still holds.
    "resumed": ({"FAKE_STEP_SECONDS": "0.1", "FAKE_WAIT_AT_STEP": "2"}, ["dpo.max_num_steps=4"]),
}


def profiles(root: Path, url: str) -> str:
    tables = []
    for name, (knobs, _) in CHAINS.items():
        env = {**knobs, "FAKE_LEDGER": f"{root}/shared/{name}.ledger"}
        env["FAKE_WAIT_FOR"] = f"{root}/shared/{name}.go"
        table = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
        tables.append(
            f'[{name}]\nexecutor = "ray"\naddress = "{url}"\nnemo_rl_dir = "{root}/RL"\n'
            f'launcher = "{PYTHON}"\nentrypoint_num_cpus = 0\nremote_dir = "{root}/shared"\n'
            f"env = {{ {table} }}\n"
        )
    return "\n".join(tables)


class Said(io.StringIO):
    """Text that sets `seen` once `marker` is in it: the test acts on what an in-process call
    printed while that call still runs."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker, self.seen = marker, threading.Event()

    def write(self, text: str) -> int:
        n = super().write(text)
        if not self.seen.is_set() and self.marker in self.getvalue():
            self.seen.set()
        return n


class Chains:
    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env
        self.work = root / "work"
        self.ended: dict[str, CliResult | subprocess.CompletedProcess] = {}

    def argv(self, name: str) -> list[str]:
        """`python -m steps ...`'s arguments that drive chain `name`."""
        data = self.root / "shared" / "data"
        return [
            "run", DPO, "-c", "tiny", "--run", name, "--until-done",
            "--input", f"train={data}/tiny_train.jsonl",
            "--input", f"validation={data}/tiny_val.jsonl",
            f"checkpointing.checkpoint_dir={self.root}/shared/{name}-ckpt", DEADLINE,
            *CHAINS[name][1],
        ]  # fmt: skip

    def start(self, name: str) -> subprocess.Popen:
        """Chain `name`'s driver as a child process, as a user starts it."""
        return subprocess.Popen(
            [sys.executable, "-m", "steps", *self.argv(name)], cwd=self.work,
            env={**self.env, "PYTHONPATH": str(REPO)}, text=True, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip

    def cli(self, *argv: str) -> CliResult:
        """`python -m steps ARGV` in this process, from the lab's work folder."""
        return steps_here(*argv, cwd=self.work, env=self.env)

    def cli_saying(self, said: Said, *argv: str) -> CliResult:
        """`cli`, with what it prints on sys.stdout written to `said` as it is printed."""
        err = io.StringIO()
        printed = SimpleNamespace(
            readouterr=lambda: SimpleNamespace(out=said.getvalue(), err=err.getvalue())
        )
        with (
            pytest.MonkeyPatch.context() as mp,
            contextlib.redirect_stdout(said),
            contextlib.redirect_stderr(err),
        ):
            return steps_cli(mp, printed, *argv, cwd=self.work, env=self.env)

    def ledger(self, name: str) -> list[int]:
        path = self.root / "shared" / f"{name}.ledger"
        return [int(s) for s in path.read_text().split()] if path.exists() else []

    def runs(self) -> list[Path]:
        return sorted((self.work / "runs" / DPO).iterdir())

    def run_of(self, name: str) -> Path:
        """This profile's newest run dir."""
        found = []
        for run in self.runs():
            data = json.loads((run / "run.json").read_text())
            if data.get("job", {}).get("profile") == name or data.get("chain_profile") == name:
                found.append(run)
        return found[-1]

    def chain_of(self, name: str) -> dict:
        """The chain record of this profile's newest run."""
        return json.loads((self.run_of(name) / "run.json").read_text())["chain"]


def interrupted_when(ready: Callable[[], bool], call: Callable[[], CliResult]) -> CliResult:
    """`call()` in this process, sent a real SIGINT (Ctrl-C) once `ready()` holds while it runs;
    after 120 s without, it is sent anyway so that nothing waits forever (the test then sees
    what was not ready)."""
    stop = threading.Event()

    def watch() -> None:
        for _ in range(400):
            if stop.wait(0.3):
                return
            if ready():
                break
        if not stop.is_set():
            os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        return call()
    finally:
        stop.set()
        watcher.join()


@pytest.fixture(scope="module")
def chains(tmp_path_factory, ray_head):  # noqa: F811
    root = tmp_path_factory.mktemp("raychain")
    stand_in_checkout(root / "RL")
    (root / "work").mkdir()
    (root / "shared" / "data").mkdir(parents=True)
    for name in ("tiny_train.jsonl", "tiny_val.jsonl"):
        (root / "shared" / "data" / name).write_text((DATA / name).read_text())
    (root / "work" / "env.toml").write_text(profiles(root, ray_head), encoding="utf-8")
    lab = Chains(root, clean_env(root, STEPS_OUTPUT=str(root / "shared" / "out"), **NO_JUDGE))
    resumed = lab.start("resumed")  # a driver of its own: it holds while the others run here
    for name in ("completes", "deterministic"):
        lab.ended[name] = lab.cli(*lab.argv(name))
    lab.ended["detached"] = interrupted_when(
        lambda: lab.ledger("detached") == [1], lambda: lab.cli(*lab.argv("detached"))
    )
    wait_for(lambda: lab.ledger("resumed") == [1], timeout=90)
    # The same command while its driver runs: refused, not a second driver.
    for key, dry in (("busy", []), ("busy_dry_run", ["--dry-run"])):
        lab.ended[key] = lab.cli(*lab.argv("resumed"), *dry)
    resumed.send_signal(signal.SIGINT)
    out, err = resumed.communicate(timeout=120)
    lab.ended["resumed"] = subprocess.CompletedProcess(resumed.args, resumed.returncode, out, err)
    return lab


def test_a_chain_completes_across_segments_with_no_step_trained_twice(chains):
    done = chains.ended["completes"]
    assert done.returncode == 0, done.stderr
    chain = chains.chain_of("completes")
    assert chain["executor"] == "ray" and chain["state"] == "done", chain
    segments = chain["segments"]
    assert len(segments) >= 2
    assert [s["steps_before"] for s in segments[1:]] == [s["steps_after"] for s in segments[:-1]]
    assert segments[-1]["steps_after"] == 6 and all(s["exit_code"] == 0 for s in segments)
    assert chains.ledger("completes") == [1, 2, 3, 4, 5, 6]
    assert "chain done (training reached its end)" in done.stdout


def test_a_deterministic_failure_stops_after_two_segments_with_its_kind_named(chains):
    failed = chains.ended["deterministic"]
    chain = chains.chain_of("deterministic")
    assert failed.returncode == 1, failed.stderr
    assert chain["state"] == "stopped" and len(chain["segments"]) == 2, chain
    assert "failed the same way (nccl_timeout) at step 1" in chain["reason"]
    assert [s["failure"]["kind"] for s in chain["segments"]] == ["nccl_timeout"] * 2
    assert "nccl_timeout" in failed.stdout


def test_a_finished_run_is_not_relaunched(chains):
    before = len(chains.runs())
    again = chains.cli(*chains.argv("completes"))
    assert again.returncode == 0, again.stderr
    assert "chain done (training reached its end): segment 0 of at most 20" in again.stdout
    assert chains.ledger("completes") == [1, 2, 3, 4, 5, 6]
    assert len(chains.runs()) == before + 1
    new = chains.runs()
    assert any(not json.loads((r / "run.json").read_text()).get("job") for r in new)


def test_ctrl_c_detaches_and_the_chain_stops_advancing_until_run_again(chains):
    detached = chains.ended["detached"]
    assert detached.returncode == 130, detached.stderr
    assert chains.ledger("detached") == [1]  # Ctrl-C came while its segment was training
    assert "the chain stops advancing" in detached.stderr
    assert "run the same command again" in detached.stderr
    chain = chains.chain_of("detached")
    assert chain["state"] == "stopped" and chain["reason"].startswith("detached"), chain
    assert len(chain["segments"]) == 1 and chain["segments"][0]["ended_utc"] is None
    run = chains.run_of("detached")
    status = chains.cli("status", str(run))
    assert "chain stopped (detached" in status.stdout, status.stdout + status.stderr
    cancel = chains.cli("cancel", str(run))
    assert cancel.returncode == 0 and "no further segment starts" in cancel.stdout, cancel.stderr
    assert (run / "CHAIN_CANCELLED").exists()


def test_until_done_with_batch_on_a_ray_profile_is_refused(chains):
    argv = [a if a != "--run" else "--batch" for a in chains.argv("completes")]
    refused = chains.cli(*argv)
    assert refused.returncode == 2
    assert "E-CHAIN-EXECUTOR" in refused.stderr and "--run RAY_PROFILE" in refused.stderr


def test_run_again_it_waits_for_the_detached_segment_then_carries_the_chain_on(chains):
    for key in ("busy", "busy_dry_run"):  # the dry run says what the run says
        busy = chains.ended[key]
        assert busy.returncode == 2 and "E-CHAIN-BUSY" in busy.stderr, busy.stderr
    assert chains.ended["resumed"].returncode == 130
    first = chains.run_of("resumed")
    before = chains.chain_of("resumed")
    held = before["segments"][0]  # Ray job still training (held before step 2), no driver
    assert before["reason"].startswith("detached") and held["ended_utc"] is None
    runs = len(chains.runs())
    said = Said("carrying on the chain of")
    when_said: dict[str, object] = {}

    def release() -> None:
        """The driver says it waits for the held segment: from then on it starts nothing beside
        it. What was there then is kept; the held segment is let go (after 60 s in any case)."""
        if said.seen.wait(60):
            when_said.update(runs=len(chains.runs()), ledger=chains.ledger("resumed"))
        (chains.root / "shared" / "resumed.go").touch()

    releaser = threading.Thread(target=release, daemon=True)
    releaser.start()
    again = chains.cli_saying(said, *chains.argv("resumed"))
    releaser.join()
    out, err = again.stdout, again.stderr
    assert when_said == {"runs": runs + 1, "ledger": [1]}, out + err
    assert again.returncode == 0, err
    assert f"carrying on the chain of {first}: segment 1 (Ray job {held['job_id']})" in out
    chain = chains.chain_of("resumed")
    assert chain["state"] == "done" and chain["continues"], chain
    segs = chain["segments"]
    assert [s["n"] for s in segs] == list(range(1, len(segs) + 1)) and len(segs) >= 2
    assert segs[0]["job_id"] == held["job_id"] and segs[0]["state"] == "SUCCEEDED"
    assert [s["steps_before"] for s in segs[1:]] == [s["steps_after"] for s in segs[:-1]]
    assert chains.ledger("resumed") == [1, 2, 3, 4]  # no step trained twice, none beside another
    old = json.loads((Path(chain["continues"]) / "run.json").read_text())["chain"]
    assert old["state"] == "stopped" and old["reason"].startswith("continued by run")
