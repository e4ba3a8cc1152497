"""A Ray chain's driver: the attached `run ... --run RAY_PROFILE --until-done` process.

A Ray cluster has no queue to start the next segment, so this process does, deciding as a Slurm
segment does (`decide`): each segment is a Ray job on the same run dir and config (NeMo-RL
resumes from its latest complete step_N), its log streamed into `segment-K.log`.
"""

from __future__ import annotations

from contextlib import redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from runners.chain import rules
from runners.chain.decide import Verdict, classify, judge, latest_checkpoint
from runners.chain.ray_resume import DETACHED, Tee, carry_on, this_driver
from runners.chain.record import CANCEL_MARK, ChainRecord, Segment, read_chain
from runners.rundir import JobRecord, update_record

if TYPE_CHECKING:
    from runners.launch.request import Backend


def _save(run_dir: Path, chain: ChainRecord, job: JobRecord | None = None) -> None:
    fields: dict[str, Any] = {"chain": chain.model_dump(mode="json")}
    if job is not None:
        fields["job"] = job.dump()
    update_record(run_dir, **fields)


def _stop(run_dir: Path, chain: ChainRecord, stop: Verdict, out: TextIO) -> int:
    chain.state, chain.reason = stop.state, stop.reason
    _save(run_dir, chain)
    print(chain.summary(), file=out, flush=True)
    if stop.state == "done":
        return 0
    last = next((s.exit_code for s in reversed(chain.segments) if s.exit_code), None)
    return last or 1


def _segment(run_dir: Path, chain: ChainRecord, req: Any, backend: Backend, out: TextIO) -> None:
    """Submit the next segment, follow it to its end, record how it ended."""
    ckpt = latest_checkpoint(Path(chain.checkpoint_dir))
    n = len(chain.segments) + 1
    job = backend.job_record(req)
    job.job_id = f"{chain.job_name}-{n}"
    job.log_path = f"ray job logs {job.job_id} (address {job.address})"
    seg = Segment.model_validate(
        rules.new_segment(n, job.job_id, 0, ckpt.total_steps if ckpt else 0)
    )
    chain.segments.append(seg)
    chain.state, chain.reason = "running", ""
    _save(run_dir, chain, job)
    try:
        backend.submit(req, job)
    finally:
        _save(run_dir, chain, job)
    print(f"segment {n}: Ray job {job.job_id} (from step {seg.steps_before})", file=out)
    log = run_dir / f"segment-{n}.log"
    try:
        with log.open("w", encoding="utf-8") as fh, redirect_stdout(Tee(out, fh)):  # type: ignore[type-var]
            code = backend.follow(job, until_done=True)
    except KeyboardInterrupt:
        chain.state, chain.reason = "stopped", DETACHED
        _save(run_dir, chain, job)
        raise
    code = 1 if code is None else int(code)
    after = latest_checkpoint(Path(chain.checkpoint_dir))
    state = str(job.state)
    failure = classify(state, code, [str(log)], "Ray") if code != 0 else None
    seg.close(state, code, after.total_steps if after else 0, failure)
    _save(run_dir, chain, job)
    print(seg.line(), file=out, flush=True)


def drive(run_dir: Path, req: Any, backend: Backend, out: TextIO) -> int:
    """Run segments until the chain is done or must stop: 0 done, else the last exit code or 1.
    KeyboardInterrupt and LostContact pass through, the record saying the chain is detached."""
    _, chain = read_chain(run_dir)
    chain.driver = this_driver()
    _save(run_dir, chain, carry_on(run_dir, chain, backend, out))
    while True:
        ckpt = latest_checkpoint(Path(chain.checkpoint_dir))
        stop = judge(chain, ckpt, (run_dir / CANCEL_MARK).exists())
        if stop is not None:
            return _stop(run_dir, chain, stop, out)
        _segment(run_dir, chain, req, backend, out)
        last = chain.segments[-1]
        stop = judge(chain, latest_checkpoint(Path(chain.checkpoint_dir)),
                     (run_dir / CANCEL_MARK).exists(), last.exit_code or 0)  # fmt: skip
        if stop is not None:
            return _stop(run_dir, chain, stop, out)
