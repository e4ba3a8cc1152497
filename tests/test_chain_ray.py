"""`run --run RAY_PROFILE --until-done` on a real local Ray head: this process drives the chain.

Real: the Ray head, its Jobs API, Ray's Job SDK. NeMo-RL is the stand-in (tests/cluster/driver.py)
that trains fake steps as NeMo-RL does (tmp_step_N -> step_N with training_info.json, stops at
checkpoint_must_save_by with exit 0, resumes from the latest step_N, fails on request) and
appends every trained step to a ledger. A Ray job has no time limit: the user's
checkpoint_must_save_by of one second ends each segment. The two chains start together as child
processes when the module's fixture runs; each test then reads its own.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cluster_fixtures import (  # noqa: F401
    NO_JUDGE,
    PYTHON,
    ray_head,
    read_until,
    stand_in_checkout,
    wait_for,
)
from run_fixtures import REPO, clean_env

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


class Chains:
    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env
        self.work = root / "work"
        self.ended: dict[str, subprocess.CompletedProcess] = {}

    def argv(self, name: str) -> list[str]:
        data = self.root / "shared" / "data"
        return [
            sys.executable, "-m", "steps", "run", DPO, "-c", "tiny", "--run", name, "--until-done",
            "--input", f"train={data}/tiny_train.jsonl",
            "--input", f"validation={data}/tiny_val.jsonl",
            f"checkpointing.checkpoint_dir={self.root}/shared/{name}-ckpt", DEADLINE,
            *CHAINS[name][1],
        ]  # fmt: skip

    def start(self, name: str) -> subprocess.Popen:
        return subprocess.Popen(
            self.argv(name), cwd=self.work, env={**self.env, "PYTHONPATH": str(REPO)},
            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

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
    procs = {name: lab.start(name) for name in CHAINS}
    for name in ("detached", "resumed"):
        wait_for(lambda n=name: lab.ledger(n) == [1], timeout=90)
        if name == "resumed":  # the same command while its driver runs: refused, not a 2nd driver
            for key, dry in (("busy", []), ("busy_dry_run", ["--dry-run"])):
                lab.ended[key] = subprocess.run(
                    [*lab.argv(name), *dry], cwd=lab.work,
                    env={**lab.env, "PYTHONPATH": str(REPO)}, text=True, capture_output=True,
                    timeout=60,
                )  # fmt: skip
        procs[name].send_signal(signal.SIGINT)
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        lab.ended[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
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
    again = subprocess.run(
        chains.argv("completes"), cwd=chains.work, env={**chains.env, "PYTHONPATH": str(REPO)},
        text=True, capture_output=True, timeout=60,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "chain done (training reached its end): segment 0 of at most 20" in again.stdout
    assert chains.ledger("completes") == [1, 2, 3, 4, 5, 6]
    assert len(chains.runs()) == before + 1
    new = chains.runs()
    assert any(not json.loads((r / "run.json").read_text()).get("job") for r in new)


def test_ctrl_c_detaches_and_the_chain_stops_advancing_until_run_again(chains):
    detached = chains.ended["detached"]
    assert detached.returncode == 130, detached.stderr
    assert "the chain stops advancing" in detached.stderr
    assert "run the same command again" in detached.stderr
    chain = chains.chain_of("detached")
    assert chain["state"] == "stopped" and chain["reason"].startswith("detached"), chain
    assert len(chain["segments"]) == 1 and chain["segments"][0]["ended_utc"] is None
    run = chains.run_of("detached")
    env = {**chains.env, "PYTHONPATH": str(REPO)}
    status = subprocess.run([sys.executable, "-m", "steps", "status", str(run)], cwd=chains.work,
                            env=env, text=True, capture_output=True, timeout=60)  # fmt: skip
    assert "chain stopped (detached" in status.stdout, status.stdout + status.stderr
    cancel = subprocess.run([sys.executable, "-m", "steps", "cancel", str(run)], cwd=chains.work,
                            env=env, text=True, capture_output=True, timeout=60)  # fmt: skip
    assert cancel.returncode == 0 and "no further segment starts" in cancel.stdout, cancel.stderr
    assert (run / "CHAIN_CANCELLED").exists()


def test_until_done_with_batch_on_a_ray_profile_is_refused(chains):
    argv = [a if a != "--run" else "--batch" for a in chains.argv("completes")]
    refused = subprocess.run(argv, cwd=chains.work, env={**chains.env, "PYTHONPATH": str(REPO)},
                             text=True, capture_output=True, timeout=60)  # fmt: skip
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
    again = chains.start("resumed")

    # The driver says it waits for the held segment: from then on it starts nothing beside it.
    head = read_until(again.stdout, "carrying on the chain of", timeout=60)
    assert len(chains.runs()) == runs + 1
    assert chains.ledger("resumed") == [1]
    (chains.root / "shared" / "resumed.go").touch()
    out, err = again.communicate(timeout=120)
    out = head + out
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
