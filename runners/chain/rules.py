"""The chain's rules on plain JSON data: the one engine both sides of a chain decide with.

A Slurm chain decides on its node with whatever `python3` is there, so this module is the
standard library only, Python 3.8+. Training state is the latest complete `step_N` (NeMo-RL
saves into `tmp_step_N` and renames it when whole); a chain goes on unless training reached its
end, it was cancelled, a failure a retry cannot help, the same failure twice at one step, two
segments without progress, or a limit. Never a clock.
"""

from __future__ import annotations

import contextlib
import glob
import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path

STEP_DIR = re.compile(r"^step_(\d+)$")
INFO = "training_info.json"
_STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"


def now_utc() -> tuple[str, float]:
    """(a segment's timestamp as recorded, the same instant in epoch seconds)."""
    t = time.time()
    return datetime.fromtimestamp(t, timezone.utc).strftime(_STAMP), t


def epoch_of(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return datetime.strptime(stamp, _STAMP).replace(tzinfo=timezone.utc).timestamp()


def _info(path: Path) -> dict | None:
    """training_info.json as a dict with an integer `total_steps`, else None (unreadable)."""
    try:
        info = json.loads((path / INFO).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(info, dict) and all(
        isinstance(info.get(k, 0), int) and not isinstance(info.get(k, 0), bool)
        for k in ("total_steps", "epoch", "step")
    )
    return info if ok and "total_steps" in info else None


def latest_checkpoint(checkpoint_dir: str | Path) -> tuple[Path, dict] | None:
    """(the highest `step_N` with a readable training_info.json, that info), else None."""
    try:
        found = [(STEP_DIR.match(p.name), p) for p in Path(checkpoint_dir).iterdir()]
    except OSError:
        return None
    for _, path in sorted(((int(m.group(1)), p) for m, p in found if m), key=lambda i: -i[0]):
        info = _info(path)
        if info is not None:
            return path, info
    return None


def epochs_done(info: dict) -> int:
    """Whole epochs trained: a save at an epoch's end (`step` 0) has finished `epoch + 1`."""
    at_epoch_end = info.get("step", 0) == 0 and info["total_steps"] > 0
    return info.get("epoch", 0) + 1 if at_epoch_end else info.get("epoch", 0)


def reached_end(info: dict | None, max_steps: int | None, max_epochs: int | None) -> bool:
    """NeMo-RL's own end: `max_num_steps` global steps, or `max_num_epochs` whole epochs."""
    if info is None:
        return False
    if max_steps is not None and info["total_steps"] >= max_steps:
        return True
    return max_epochs is not None and epochs_done(info) >= max_epochs


def new_segment(n: int, job_id: str, restart: int, steps_before: int) -> dict:
    """A segment as run.json holds it (record.Segment's fields), just started."""
    return {
        "n": n, "job_id": job_id, "restart": restart, "state": "RUNNING", "exit_code": None,
        "steps_before": steps_before, "steps_after": None, "started_utc": now_utc()[0],
        "ended_utc": None, "seconds": None, "failure": None,
    }  # fmt: skip


def close_segment(
    seg: dict, state: str, exit_code: int | None, steps: int, failure: dict | None
) -> None:
    """Record how a segment ended (in place): its state, the steps after it, its time."""
    stamp, now = now_utc()
    started = epoch_of(seg.get("started_utc"))
    seg.update(state=state, exit_code=exit_code, steps_after=steps, ended_utc=stamp)
    seg["seconds"] = round(now - started, 3) if started else None
    seg["failure"] = failure


def _progressed(seg: dict) -> bool:
    after = seg.get("steps_after")
    return after is not None and after > seg.get("steps_before", 0)


def gpu_hours_used(chain: dict) -> float:
    seconds = sum(s.get("seconds") or 0.0 for s in chain.get("segments") or [])
    return seconds * chain.get("gpus", 1) / 3600.0


def verdict(chain: dict, done: bool, cancelled: bool) -> tuple[str, str] | None:
    """(state, why) when no further segment may run, None when one may (segments up to date)."""
    if cancelled:
        return "cancelled", "cancelled by `python -m steps cancel`"
    if done:
        return "done", "training reached its end"
    segments = chain.get("segments") or []
    ended = [s for s in segments if s.get("ended_utc") is not None]
    last = ended[-1] if ended else None
    if last is not None and last.get("failure") and not last["failure"]["retryable"]:
        kind = last["failure"]["kind"]
        return "stopped", f"segment {last['n']} failed with {kind}, which a retry cannot fix"
    if len(ended) >= 2:
        before, after = ended[-2], ended[-1]
        one, two = before.get("failure"), after.get("failure")
        same_step = before.get("steps_after") == after.get("steps_after")
        if one and two and one["kind"] == two["kind"] and same_step:
            return "stopped", (
                f"segments {before['n']} and {after['n']} failed the same way "
                f"({two['kind']}) at step {after.get('steps_after')}"
            )
        if not _progressed(before) and not _progressed(after):
            return "stopped", f"no training step saved in segments {before['n']} and {after['n']}"
    if len(segments) >= chain["max_segments"]:
        return "stopped", f"--max-segments {chain['max_segments']} used up"
    budget = chain.get("gpu_hours")
    if budget is not None and gpu_hours_used(chain) >= budget:
        return "stopped", f"GPU-hour budget spent ({gpu_hours_used(chain):.2f} of {budget:g})"
    return None


def judge(
    chain: dict, info: dict | None, cancelled: bool, exit_code: int = 0
) -> tuple[str, str] | None:
    """Before a segment (exit_code 0) or after one: done only when NeMo-RL reached its own end
    and the segment exited 0 (a deadline stop exits 0 too)."""
    done = exit_code == 0 and reached_end(info, chain.get("max_steps"), chain.get("max_epochs"))
    return verdict(chain, done, cancelled)


def segment_logs(log_dir: str, job_dir: str, job_id: str, restart: int) -> list[str]:
    """A segment's logs: ray.sub's driver, head and worker logs, then the batch output."""
    folder = f"{log_dir}/{job_id}-{restart}-logs" if restart else f"{log_dir}/{job_id}-logs"
    found = [f"{folder}/ray-driver.log", f"{folder}/ray-head.log"]
    found += sorted(glob.glob(f"{glob.escape(folder)}/ray-worker-*.log"))
    return [*found, f"{job_dir}/slurm-{job_id}.out"]


def classify(state: str, exit_code: int | None, logs: list[str], scheduler: str = "Slurm") -> dict:
    """The failure that ended a segment, {kind, retryable, evidence}: the logs streamed through
    the prefilter, the first error weighed against the scheduler's state (runners/monitor)."""
    if state == "REQUEUED":  # Slurm put the job back itself (a requeue, a node failure): it reruns
        return {"kind": "requeued", "retryable": True, "evidence": "Slurm requeued the job"}
    from runners.monitor.classify import LogClassifier, diagnose
    from runners.monitor.logscan import python_prefilter

    classifier = LogClassifier()
    for path in logs:
        with contextlib.suppress(OSError), open(path, "rb") as fh:  # a log never written
            for number, line in python_prefilter(fh):
                classifier.feed(path, number, line)
    found = diagnose(classifier, state, exit_code, scheduler)
    if found.kind is None:  # exit code not 0 and no error found: nothing says a retry helps
        return {"kind": "unknown", "retryable": False, "evidence": f"{scheduler} state {state}"}
    evidence = found.evidence[0].render() if found.evidence else f"{scheduler} state {state}"
    return {"kind": found.kind, "retryable": found.retryable, "evidence": evidence}
