"""Outputs of runs that end elsewhere (an exec into NeMo-RL, a cluster job): registered pending at
launch, settled `ready` or `failed` when the registry is next read, from what steps already
recorded (so no cluster is asked), then logged to W&B if configured (docs/running.md, "Artifacts
by name")."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from pydantic import ValidationError

from catalog.contracts.checkpoints import check_nemo_rl
from catalog.errors import ERROR, StepsError
from catalog.record_file import read_json
from runners.artifacts.registry import (
    RegistryFile,
    Version,
    Watch,
    load,
    locked,
    save,
)
from runners.digest import DigestMemo, content_digest
from runners.rundir import JobRecord, read_record

OK_STATES = ("COMPLETED", "SUCCEEDED")  # Slurm's, Ray's
BAD_STATES = ("FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
              "BOOT_FAIL", "DEADLINE", "STOPPED", "NOT_SUBMITTED")  # fmt: skip
Ended = tuple[bool, str | None] | None  # None: not ended (or cannot tell); (ok, why)


def this_process(max_steps: int | None = None, max_epochs: int | None = None) -> Watch:
    """A watch on this process: a local run about to exec keeps its pid."""
    pid = os.getpid()
    return Watch(host=socket.gethostname(), pid=pid, started=_started(pid),
                 max_steps=max_steps, max_epochs=max_epochs)  # fmt: skip


def training_end(config: dict) -> tuple[int | None, int | None]:
    """(max_num_steps, max_num_epochs) of the one algorithm section of a NeMo-RL config."""
    sections = [v for v in config.values() if isinstance(v, dict) and "max_num_steps" in v]
    if len(sections) != 1:
        return None, None
    ints = [sections[0].get(k) for k in ("max_num_steps", "max_num_epochs")]
    steps, epochs = (v if isinstance(v, int) and not isinstance(v, bool) else None for v in ints)
    return steps, epochs


def _started(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks), None where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def _alive(w: Watch) -> bool:
    assert w.pid is not None
    try:
        os.kill(w.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process holds the pid: alive, and not ours unless started says so
    return w.started is None or _started(w.pid) == w.started


def _ended(v: Version) -> Ended:
    """How the version's run ended, from run.json (chain, then job) or its watched process."""
    try:
        record = read_record(Path(v.made_by.run_dir or ""))
    except StepsError as exc:
        return False, f"its run record is gone: {exc.finding.message}"
    chain, job = record.get("chain"), record.get("job")
    if isinstance(chain, dict):
        state, why = chain.get("state"), chain.get("reason") or ""
        if state == "done":
            return True, None
        if state in ("stopped", "cancelled"):
            return False, f"chain {state}: {why}".rstrip(": ")
        return None
    if isinstance(job, dict):
        try:
            rec = JobRecord.model_validate(job)
        except ValidationError:
            return None
        if rec.state in OK_STATES:
            return True, None
        if rec.state in BAD_STATES:
            code = f" (exit code {rec.exit_code})" if rec.exit_code is not None else ""
            return False, f"job {rec.job_id or rec.job_name} ended {rec.state}{code}"
        return None
    w = v.watch
    if w is None or w.pid is None or w.host != socket.gethostname() or _alive(w):
        return None
    return True, None  # the process is gone: the checkpoint says whether training got to its end


def _reached(step: Path, w: Watch | None) -> str | None:
    """Why `step` is short of training's end (max_num_steps, or max_num_epochs whole epochs: a save
    at an epoch's end has `step` 0), else None."""
    if w is None or w.pid is None or (w.max_steps is None and w.max_epochs is None):
        return None  # a job's own state said it completed
    try:
        info = read_json(step / "training_info.json")
        steps, epoch, in_epoch = (int(info.get(k, 0)) for k in ("total_steps", "epoch", "step"))
    except (OSError, ValueError, TypeError, AttributeError):
        return f"{step.name}/training_info.json is unreadable"
    epochs = epoch + 1 if in_epoch == 0 and steps > 0 else epoch
    if (w.max_steps is not None and steps >= w.max_steps) or (
        w.max_epochs is not None and epochs >= w.max_epochs
    ):
        return None
    return (
        f"the process ended at {step.name} ({steps} of max_num_steps {w.max_steps}, "
        f"{epochs} of max_num_epochs {w.max_epochs}): stopped before training's end"
    )


def _settle(v: Version, memo: DigestMemo) -> bool:
    """Settle one pending version in place when its run has ended; True when it changed."""
    ended = _ended(v)
    if ended is None:
        return False
    ok, why = ended
    path = Path(v.path)
    local = v.watch is not None and v.watch.pid is not None
    if ok and local and not path.exists():
        ok, why = False, f"the process ended and {path} does not exist"
    if ok and "checkpoint" in v.type and "nemo_rl" in v.type and path.exists():
        res = check_nemo_rl(path)
        errors = [f for f in res.findings if f.severity == ERROR]
        if errors or res.resolved is None:
            ok, why = False, f"the run ended but {path} is no checkpoint: {errors[0].message}"
        else:
            why = _reached(res.resolved, v.watch)
            ok, path = why is None, res.resolved
    if not ok:
        v.state, v.reason = "failed", why
        return True
    v.state, v.path = "ready", str(path)
    if path.exists():
        v.digest, v.files, v.bytes = content_digest(path, memo)
    else:
        v.reason = f"{path} is not visible on this machine: not hashed here"
    return True


def settled(root: Path, reg: RegistryFile) -> RegistryFile:
    """`reg` with every ended pending version settled and saved (unchanged when none)."""
    if not any(v.state == "pending" for e in reg.artifacts.values() for v in e.versions):
        return reg
    with locked(root):
        reg, memo = load(root), DigestMemo()
        changed = [(name, v) for name, e in reg.artifacts.items() for v in e.versions
                   if v.state == "pending" and _settle(v, memo)]  # fmt: skip
        for name, v in changed:
            if v.state == "ready" and v.wandb and "logged" not in v.wandb:
                _log(root, name, v)
        if changed:
            save(root, reg)
            memo.save()
    return reg


def _log(root: Path, name: str, v: Version) -> None:
    """Log a version that became ready to the W&B project its run was launched with."""
    from runners.artifacts.record import log_versions
    from runners.artifacts.wandb_log import WandbSettings

    to = dict(v.wandb or {})
    settings = WandbSettings(str(to["project"]), to.get("entity"), str(to.get("source", "")))
    run_dir = Path(v.made_by.run_dir or root)
    try:
        report = log_versions(settings, v.made_by, run_dir if run_dir.is_dir() else root,
                              [(name, v)])  # fmt: skip
    except StepsError as exc:  # wandb not installed where it settled: said, not retried
        v.wandb = {**to, "logged": False, "note": exc.finding.message}
        return
    v.wandb = {**to, "logged": True, "mode": report["mode"]}
    if report.get("sync"):
        v.wandb["sync"] = report["sync"]
