"""A launched run as the job commands show it: a chain's current segment, the live state, the
progress, and the `jobs` listing's rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from catalog.errors import StepsError
from runners.launch.jobs import job_runs, progress_all, refresh, refresh_all
from runners.launch.records import backend_for_job, job_of
from runners.launch.request import TERMINAL
from runners.rundir import JobRecord

if TYPE_CHECKING:
    from runners.chain.record import ChainRecord
    from runners.monitor.progress import Progress


def _chain(data: dict) -> bool:
    return isinstance(data.get("chain"), dict)


def live(run_dir: Path, data: dict) -> tuple[dict, JobRecord, ChainRecord | None]:
    """(run.json, the job with its live state, the chain's record or None): for `status`."""
    if not _chain(data):
        return data, refresh(run_dir, data), None
    from runners.chain.follow import refresh_chain
    from runners.chain.record import ChainRecord

    data = refresh_chain(run_dir, data)
    return data, job_of(data, run_dir), ChainRecord.model_validate(data["chain"])


def followed_job(run_dir: Path, data: dict) -> JobRecord:
    """The job whose log `logs` shows, with its live state (a chain's: the current segment)."""
    data, job, chain = live(run_dir, data)
    if chain is not None and not job.job_id:  # sbatch never confirmed it: looked up by name
        job = refresh(run_dir, data)
    return _batch_output_if_no_driver_log(job)


def _batch_output_if_no_driver_log(job: JobRecord) -> JobRecord:
    """An ended ray.sub job whose driver log was never written (it died before the Ray head
    was up): its batch output instead, with `log_note` saying so."""
    from runners.launch.backends import traits

    log, out = job.log_path, job.batch_output
    if "ray_sub" not in traits(job.executor).has:
        return job
    if job.state not in TERMINAL or not out or not log:
        return job
    if log == out or backend_for_job(job).log_tail(job, 0) is not None:  # it exists
        return job
    note = f"the driver log {log} was never written (the job ended before it started); "
    return job.model_copy(
        update={"log_path": out, "log_note": f"{note}showing the batch output {out}"}
    )


def cancel(run_dir: Path, data: dict) -> str:
    """Cancel the run's job (every segment of a chain); what the cluster said."""
    if _chain(data):
        from runners.chain.follow import cancel_chain, refresh_chain

        said = cancel_chain(data, run_dir)
        refresh_chain(run_dir, data)
        return said
    job = refresh(run_dir, data)
    if job.job_id and job.state in TERMINAL:
        return (
            f"job {job.job_id} had already finished: {job.state} "
            f"(exit code {job.exit_code}); nothing to cancel"
        )
    if not job.job_id:  # sbatch never confirmed it and Slurm knows no such name
        raise StepsError(
            "E-CANCEL",
            f"no job to cancel for {run_dir}: {job.reason or 'it was never submitted'}",
            fix="`python -m steps status RUN` shows what became of the submission",
            exit_code=2,
        )
    said = backend_for_job(job).cancel(job)
    from runners.run.judge import verdict

    judge = verdict(run_dir, data)  # a judge still running goes too (the GPU job waits on it)
    if judge is not None and judge.job.job_id and judge.job.state not in TERMINAL:
        said += f"; {backend_for_job(judge.job).cancel(judge.job)} (the upstream judge)"
    return said


@dataclass
class JobRow:
    """One run of the `jobs` listing: its live job, progress and chain summary."""

    run_dir: Path
    step: str | None  # run.json's step id
    job: JobRecord
    progress: Progress | None
    chain: str | None  # the chain's one-line summary

    def to_dict(self) -> dict:
        row = {"run_dir": str(self.run_dir), "step": self.step, **self.job.dump()}
        row["progress"] = self.progress.to_dict() if self.progress else None
        if self.chain is not None:
            row["chain"] = self.chain
        return row


def listed_runs(root: Path, skipped: list[StepsError]) -> list[tuple[Path, dict]]:
    """Every run with a job you alone could have written, newest first; others to `skipped`."""
    from runners.chain.follow import refresh_chain

    return [
        (run_dir, refresh_chain(run_dir, data))
        if _chain(data) and job_of(data).unlocated is None  # an unknown cluster is not asked
        else (run_dir, data)
        for run_dir, data in job_runs(root, skipped)
    ]


def job_rows(runs: list[tuple[Path, dict]]) -> list[JobRow]:
    """Every run's row, hosts and progress asked concurrently (no answer: UNKNOWN, `reason`)."""
    from runners.chain.record import ChainRecord

    jobs = refresh_all(runs)
    rows = []
    for (run_dir, data), job, progress in zip(runs, jobs, progress_all(runs, jobs), strict=True):
        chain = ChainRecord.model_validate(data["chain"]).summary() if _chain(data) else None
        rows.append(JobRow(run_dir, data.get("step"), job, progress, chain))
    return rows
