"""Inputs an earlier stage of a queued pipeline writes, derived in the job when it starts (see
docs/cluster.md, "Stages that read what an earlier stage writes"): `first` puts
`materialize-inputs JOB_DIR --` before the stage's program; each input `runners.bind` deferred
is judged by the stage's contract, written or linked, recorded for a chain's later starts, then
the program is exec'd."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from catalog.atomic_write import write_atomic
from catalog.errors import Finding, StepsError
from catalog.file_digest import SHA256, file_digests
from catalog.yamlfile import read_data
from runners.bind import (
    DEFERRED,
    SPLIT_OF_PORT,
    Derived,
    _needs_agent_ref,
    _read_manifest,
    _split_shards,
)

SUBCOMMAND = "materialize-inputs"
CODE = "E-STAGE-INPUT"
RECORD = "inputs/materialized.json"


class Later(BaseModel):
    """One entry of `inputs/deferred.json` (written by `runners.bind._defer`)."""

    model_config = ConfigDict(extra="forbid")
    relpath: str  # in the run dir
    source: str  # the earlier stage's output, as the job sees it
    port: str
    rows: bool  # rows into one file; else a link to a NeMo-RL checkpoint's step_N
    type: str
    key: str  # the config key bound to relpath
    agent_ref: dict | None = None


class Written(BaseModel):
    """What the stage's first start put at `relpath` for one input (an entry of RECORD)."""

    model_config = ConfigDict(extra="forbid")
    relpath: str
    source: str
    port: str
    sha256: str | None = None  # rows: the joined file's digest
    target: str | None = None  # a checkpoint: the step_N the link names

    def of(self, later: Later) -> bool:
        """Whether this records `later` (a deferred.json rewritten since is derived anew)."""
        same = (self.relpath, self.source, self.port) == (later.relpath, later.source, later.port)
        return same and (self.sha256 is not None) == later.rows


def first(run: Any, target: Any) -> None:
    """Prefix a planned stage's job command with the materialize step (when it defers any)."""
    files = run.files
    if files is None or not files.binding.later or run.request is None:
        return
    from runners.launch.job_code import steps_command

    launcher = steps_command(run.job_dir, target.profile, target.profile.launcher)
    run.command = run.request.command = [*launcher, SUBCOMMAND, run.job_dir, "--", *run.command]


def stage_code(run: Any) -> None:
    """The copy of our code the materialize step runs, unless the submit stages it anyway."""
    from runners.launch.job_code import stage

    files, profile = run.files, run.target.profile
    later = files is not None and files.binding.later
    if later and not run.kind.runs_our_code and run.chain is None and not profile.steps_launcher:
        stage(run.run_dir)


def _failure(later: Later, message: str, fix: str, path: str) -> StepsError:
    return StepsError(CODE, f"input {later.port} ({later.key}): {message}", path=path, fix=fix,
                      exit_code=1)  # fmt: skip


def _judge(job_dir: Path, later: Later, files: list[tuple[Path, Any]], out: TextIO) -> None:
    """The stage's contract on each file, as its dry run judges a bound input: findings printed,
    errors raised as one E-STAGE-INPUT."""
    from catalog.upstream import GYM_SUBDIR
    from runners.preflight import BoundArtifact, PreflightContext
    from runners.preflight.artifacts import artifact_contracts

    config = read_data(job_dir / "resolved.yaml") or {}
    gym = Path.cwd() / GYM_SUBDIR  # the job runs from the NeMo-RL checkout
    arts = [
        BoundArtifact(later.port, later.type, later.key, str(path), expected_rows=rows)
        for path, rows in files
    ]
    ctx = PreflightContext("", None, config, inputs=arts, gym_root=gym if gym.is_dir() else None)
    findings = list(artifact_contracts(ctx))
    for f in findings:
        out.write(f.render() + "\n")
    errors = sum(1 for f in findings if f.is_error)
    if errors:
        raise _failure(
            later,
            f"{later.source}, written by an earlier stage, breaks this stage's contract "
            f"({errors} finding{'s' if errors > 1 else ''} above)",
            "do what the findings above say (in the earlier stage's config or data, or in this "
            "stage's config), then run the pipeline again",
            later.source,
        )


def _sources(later: Later) -> list[tuple[Path, int | None]]:
    """The split's shards (with the rows the manifest records), or the one file."""
    source = Path(later.source)
    found = _read_manifest(source)
    if found is not None:
        listed = _split_shards(*found, SPLIT_OF_PORT.get(later.port, later.port), later.port)
        return [(p, n if isinstance(n, int) and not isinstance(n, bool) else None)
                for p, n in listed]  # fmt: skip
    if source.is_file():
        return [(source, None)]
    raise _failure(later, f"{source} was not written by the stage before this one",
                   "read that stage's log (`python -m steps logs PIPELINE_ROOT`)",
                   str(source))  # fmt: skip


def _sha256(path: Path) -> str | None:
    try:
        return file_digests(path, (SHA256,))[SHA256]
    except FileNotFoundError:
        return None


def _rows(job_dir: Path, later: Later, out: TextIO, kept: Written | None) -> Written:
    """The rows into `relpath`, judged and joined by bind's writer (or kept from a first start)."""
    path = job_dir / later.relpath
    if kept is not None and _sha256(path) == kept.sha256:
        out.write(f"input {later.port}: {later.relpath} kept as the stage's first start wrote it "
                  f"(sha256 {kept.sha256[:16]})\n")  # fmt: skip
        return kept
    files = _sources(later)
    if kept is None:  # on a later start the digest judges: the same bytes were judged then
        _judge(job_dir, later, files, out)
    paths = [p for p, _ in files]
    fill = later.agent_ref if any(_needs_agent_ref(p) for p in paths) else None  # as bind fills
    aside = job_dir / Path(later.relpath).with_name(f".derived-{path.name}")
    try:
        Derived(str(aside.relative_to(job_dir)), paths, fill, later.port).write(job_dir)
        digest = _sha256(aside) or ""
        if kept is not None and digest != kept.sha256:
            raise _failure(
                later,
                f"{later.relpath}, the rows this stage started with (sha256 {kept.sha256}), is "
                f"gone or changed, and {later.source} now gives other rows (sha256 {digest}): "
                "this segment would train on other data than the segments before it",
                "run the pipeline again: the stage starts over on what the earlier stage wrote",
                str(path),
            )
        aside.replace(path)
    finally:
        aside.unlink(missing_ok=True)
    again = "put back as the stage's first start wrote it, " if kept is not None else ""
    out.write(f"input {later.port}: {len(files)} file(s) of {later.source} -> {later.relpath} "
              f"({again}sha256 {digest[:16]})\n")  # fmt: skip
    return Written(relpath=later.relpath, source=later.source, port=later.port, sha256=digest)


def _link(link: Path, step: Path) -> None:
    """`link` -> `step`, made aside and renamed: never missing, never half made."""
    link.parent.mkdir(parents=True, exist_ok=True)
    aside = link.with_name(f".partial-{link.name}")
    aside.unlink(missing_ok=True)
    aside.symlink_to(step, target_is_directory=True)
    aside.replace(link)


def _checkpoint(job_dir: Path, later: Later, out: TextIO, kept: Written | None) -> Written:
    """A link `relpath` to the checkpoint's latest complete step_N; on a later start, to the
    step the first start linked (a newer step_N is not this stage's input)."""
    from catalog.contracts.checkpoints import check_nemo_rl

    link = job_dir / later.relpath
    if kept is not None and kept.target is not None:
        step = Path(kept.target)
        if not step.is_dir():
            raise _failure(later, f"{step}, the step this stage started from, is gone",
                           "run the pipeline again: the stage starts over from the checkpoint's "
                           "latest complete step", str(step))  # fmt: skip
        if link.is_symlink() and os.readlink(link) == str(step):
            out.write(f"input {later.port}: {later.relpath} -> {step} kept\n")
            return kept
        _link(link, step)
        out.write(f"input {later.port}: {later.relpath} -> {step} (linked again)\n")
        return kept
    source = Path(later.source)
    _judge(job_dir, later, [(source, None)], out)
    step = check_nemo_rl(source).resolved or source
    _link(link, step)
    out.write(f"input {later.port}: {later.relpath} -> {step}\n")
    return Written(relpath=later.relpath, source=later.source, port=later.port, target=str(step))


def _read(path: Path, what: str, model: Any) -> Any:
    try:
        return TypeAdapter(model).validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise StepsError("E-RUN-RECORD", f"cannot read {what} ({exc})", path=str(path),
                         fix="submit the pipeline again", exit_code=2) from None  # fmt: skip


def materialize(job_dir: Path, out: TextIO = sys.stdout) -> None:
    """Derive every deferred input of `job_dir`, or keep what the first start derived."""
    entries = _read(job_dir / DEFERRED, "the deferred inputs", list[Later])
    record = job_dir / RECORD
    kept: list[Written] = []
    if record.exists() or record.is_symlink():
        kept = _read(record, "the inputs the stage's first start derived", list[Written])
    written = []
    for later in entries:
        prior = next((w for w in kept if w.of(later)), None)
        written.append((_rows if later.rows else _checkpoint)(job_dir, later, out, prior))
    if written != kept:
        write_atomic(record, TypeAdapter(list[Written]).dump_json(written, indent=1))
    out.flush()


def main(job_dir: str, program: list[str], out: TextIO = sys.stdout) -> int:
    """Materialize, then exec `program`; a failure is printed as a finding, never a traceback."""
    try:
        materialize(Path(job_dir), out)
    except (StepsError, OSError) as exc:
        finding = exc.finding if isinstance(exc, StepsError) else Finding(
            CODE, f"cannot derive the inputs in the run dir ({exc})", job_dir,
            fix="check the run dir's filesystem (space, permissions) and run the pipeline again",
        )  # fmt: skip
        out.write(f"steps: {finding.render()}\n")
        out.flush()
        return getattr(exc, "exit_code", 1) or 1
    if not program:
        return 0
    out.flush()
    try:
        os.execvp(program[0], program)
    except OSError as exc:  # the program is not there: as a shell would say it
        out.write(f"steps: cannot run {program[0]}: {exc.strerror}\n")
        return 127
