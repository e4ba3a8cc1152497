"""The chain record: run.json's `chain`, written by the submitter and then by each segment
(Slurm: the job dir's copy; Ray: the driver's local run.json). A requeued Slurm segment keeps its
job id with a higher restart count. Keys this version does not know are ignored (pydantic's
default)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from catalog.errors import StepsError
from catalog.record_file import read_json
from runners.chain import rules, segment_program
from runners.chain.segment_program import CANCEL_MARK, CHAIN_SECRETS, RECORD  # noqa: F401

ChainState = Literal["queued", "running", "done", "stopped", "cancelled"]


class Failure(BaseModel):
    """Why a segment ended badly: a failure kind, whether a retry can help, the evidence."""

    kind: str
    retryable: bool
    evidence: str = ""


class Segment(BaseModel):
    """One run of the segment script: what it found, what it trained, how it ended."""

    n: int
    job_id: str
    restart: int = 0
    state: str = "RUNNING"  # Slurm's final state once known
    exit_code: int | None = None
    steps_before: int = 0
    steps_after: int | None = None
    started_utc: str | None = None
    ended_utc: str | None = None
    seconds: float | None = None
    failure: Failure | None = None

    @property
    def ended(self) -> bool:
        return self.ended_utc is not None

    def close(self, state: str, exit_code: int | None, steps: int, failure: Failure | None):
        """Record how the segment ended (both executors): state, steps after it, its time."""
        closed = self.model_dump(mode="json")
        rules.close_segment(closed, state, exit_code, steps, None)
        for name in ("state", "exit_code", "steps_after", "ended_utc", "seconds"):
            setattr(self, name, closed[name])
        self.failure = failure

    def line(self) -> str:
        """`segment 2 (job 41): COMPLETED exit 0, steps 5 -> 9, 62 s`, and its failure kind."""
        again = f" restart {self.restart}" if self.restart else ""
        code = "" if self.exit_code is None else f" exit {self.exit_code}"
        after = "?" if self.steps_after is None else str(self.steps_after)
        took = "" if self.seconds is None else f", {self.seconds:.0f} s"
        why = ""
        if self.failure is not None:
            retry = "retryable" if self.failure.retryable else "not retryable"
            why = f"; {self.failure.kind} ({retry})"
        return (
            f"segment {self.n} (job {self.job_id}{again}): {self.state}{code}, "
            f"steps {self.steps_before} -> {after}{took}{why}"
        )


class ChainRecord(BaseModel):
    """What a chain needs to decide inside its jobs, and what it decided so far."""

    executor: str = "slurm"  # a backend of runners/launch/backends/
    state: ChainState = "queued"
    reason: str = ""
    max_segments: int = Field(20, ge=1)
    gpu_hours: float | None = Field(None, gt=0)
    gpus: int = Field(1, ge=0)  # nodes x GPUs per node: GPU-hours = seconds x gpus / 3600
    checkpoint_dir: str  # as the batch host sees it
    max_steps: int | None = None
    max_epochs: int | None = None
    must_save_by: str | None = None
    must_save_by_from: Literal["chain", "user", "unsupported", "none"] = "chain"
    wandb_id: str | None = None
    job_name: str  # Slurm: every segment's job name; Ray: the segments' submission id prefix
    sbatch: list[str] = []  # Slurm: the segment's sbatch argv, without a dependency
    submit_cwd: str = ""
    log_dir: str = ""  # Slurm: where ray.sub writes `<job id>[-<restart>]-logs/`
    next_job_id: str | None = None
    # A pipeline's held job the next stages wait for: released when done, else cancelled.
    gate_job_id: str | None = None
    driver: str = ""  # Ray: `host:pid` of the attached process that drives the chain
    continues: str = ""  # Ray: the earlier run dir whose unfinished chain this one carries on
    segments: list[Segment] = []

    @property
    def attached(self) -> bool:
        """This process drives the chain (its backend's `chain`), not a segment script."""
        from runners.launch.backends import traits

        return traits(self.executor).chain == "attached"

    @property
    def gpu_hours_used(self) -> float:
        return sum((s.seconds or 0.0) for s in self.segments) * self.gpus / 3600.0

    def summary(self) -> str:
        """One line: state, segment k of N, the last known global step, GPU-hours."""
        step = next((s.steps_after for s in reversed(self.segments) if s.steps_after), None)
        if step is None:
            step = self.segments[-1].steps_before if self.segments else 0
        end = f"/{self.max_steps}" if self.max_steps else ""
        why = f" ({self.reason})" if self.reason else ""
        return (
            f"chain {self.state}{why}: segment {len(self.segments)} of at most "
            f"{self.max_segments}, step {step}{end}, {self.gpu_hours_used:.2f} GPU-hours"
        )


def read_chain(run_dir: Path) -> tuple[dict, ChainRecord]:
    """(run.json, its chain) from a run dir; E-CHAIN-RECORD (exit 2) when there is none."""
    path = run_dir / RECORD
    try:
        data = read_json(path)
        return data, ChainRecord.model_validate(data["chain"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StepsError(
            "E-CHAIN-RECORD",
            f"no readable chain record: {exc}",
            path=str(path),
            fix="name the job dir of a run submitted with --until-done",
            exit_code=2,
        ) from None


def sibling_chains(run_dir: Path, chain: ChainRecord) -> Iterator[tuple[Path, dict, ChainRecord]]:
    """Other run dirs of this step on the same executor and checkpoint dir, newest first."""
    if not run_dir.parent.is_dir():  # the step's first run
        return
    for other in sorted(run_dir.parent.iterdir(), reverse=True):
        if other == run_dir or not (other / RECORD).is_file():
            continue
        try:
            data, earlier = read_chain(other)
        except StepsError:
            continue
        if earlier.executor == chain.executor and earlier.checkpoint_dir == chain.checkpoint_dir:
            yield other, data, earlier


def write_chain(run_dir: Path, data: dict, chain: ChainRecord) -> None:
    """Rewrite run.json with this chain, atomically."""
    segment_program.write_chain(run_dir, data, chain.model_dump(mode="json"))
