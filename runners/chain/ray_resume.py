"""A Ray chain run again carries on the chain its earlier driver left.

Ctrl-C (or a lost connection) leaves a segment training with no driver. Run again, before its
first segment the new driver finds the newest earlier chain of the step on the same checkpoint
dir that did not end, waits for its open segment (two never train one checkpoint dir at once),
and takes its segments over, so the limits and rules see the whole history. A chain whose driver
still runs on this host is not taken over (E-CHAIN-BUSY).
"""

from __future__ import annotations

import os
import socket
from contextlib import redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from catalog.errors import StepsError
from runners.chain.decide import classify, latest_checkpoint
from runners.chain.record import CANCEL_MARK, ChainRecord, sibling_chains, write_chain
from runners.launch.records import job_of
from runners.launch.request import TERMINAL
from runners.rundir import JobRecord

if TYPE_CHECKING:
    from runners.launch.request import Backend

DETACHED = "detached (Ctrl-C): no further segment starts until the chain is run again"


def this_driver() -> str:
    """`host:pid` of the process that drives a Ray chain (recorded in its chain record)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(driver: str) -> bool:
    """The recorded driver still runs here (another host's process cannot be seen: not alive)."""
    host, _, pid = driver.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(int(pid))


def _zombie(pid: int) -> bool:
    """Exited but not yet reaped by its parent (an init that reaps late keeps it for seconds)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def unfinished(run_dir: Path, chain: ChainRecord) -> tuple[Path, dict, ChainRecord] | None:
    """The newest earlier Ray chain of this step on the same checkpoint dir, if it did not end."""
    for other, data, earlier in sibling_chains(run_dir, chain):
        if earlier.state == "queued" and not earlier.segments:
            continue  # never drove a segment (a dry run kept, a refused start)
        if (other / CANCEL_MARK).exists():
            return None  # `cancel RUN` ended it
        if earlier.state == "running" or earlier.reason == DETACHED:
            if _alive(earlier.driver):
                raise StepsError(
                    "E-CHAIN-BUSY",
                    f"the chain of {other} is still driven by process {earlier.driver}",
                    fix="let that process go on, or stop it (Ctrl-C) and run this again",
                    exit_code=2,
                )
            return other, data, earlier
        return None  # the newest chain on this checkpoint dir ended: start afresh
    return None


def carry_on(run_dir: Path, chain: ChainRecord, backend: Backend, out: TextIO) -> JobRecord | None:
    """Take over an unfinished earlier chain (its open segment followed to its end first)."""
    found = unfinished(run_dir, chain)
    if found is None:
        return None
    old_dir, data, old = found
    job = job_of(data, old_dir) if data.get("job") else None
    for seg in old.segments:
        if seg.ended:
            continue
        print(
            f"carrying on the chain of {old_dir}: segment {seg.n} (Ray job {seg.job_id}) "
            "trains on; waiting for its end before the next one",
            file=out,
            flush=True,
        )
        ran = (job or JobRecord(executor="ray")).model_copy(update={"job_id": seg.job_id})
        job = _wait(backend, ran, old_dir / f"segment-{seg.n}.log", out)
        code = 1 if job.exit_code is None else job.exit_code
        log = [str(old_dir / f"segment-{seg.n}.log")]
        failure = classify(str(job.state), code, log, "Ray") if code != 0 else None
        after = latest_checkpoint(Path(chain.checkpoint_dir))
        seg.close(str(job.state), code, after.total_steps if after else 0, failure)
        print(seg.line(), file=out, flush=True)
    chain.segments = [*old.segments, *chain.segments]
    chain.continues = str(old_dir)
    old.state, old.reason = "stopped", f"continued by run {run_dir}"
    write_chain(old_dir, {**data, "job": job.dump() if job else {}}, old)
    return job


def _wait(backend: Backend, job: JobRecord, log: Path, out: TextIO) -> JobRecord:
    """Follow a segment still running (its log appended to its file) to its end; its record."""
    job = backend.refresh(job)
    if job.state not in TERMINAL:
        with log.open("a", encoding="utf-8") as fh, redirect_stdout(Tee(out, fh)):  # type: ignore[type-var]
            backend.follow(job, until_done=True)
        job = backend.refresh(job)
    return job


class Tee:
    """Text to the terminal and to a segment's log file in the run dir, as it arrives."""

    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()
