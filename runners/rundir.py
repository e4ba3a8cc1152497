"""The run directory: what was compiled, resolved and launched, written whole or not at all.

`<root>/<step-id>/<UTC time>-<short hash>/` holds `config.yaml` (what NeMo-RL is given: plain
`${oc.env:...}` pinned to the values preflight checked, bound paths absolute), `resolved.yaml`
and `run.json` (`RunRecord`). Secrets never reach any of them: a literal secret in the config
becomes an `${oc.env:...}` reference, passed in the environment.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from catalog.atomic_write import write_atomic
from catalog.folder_faults import existing_folder, make_folders, writing
from runners.secrets import has_token, is_secret_key, is_switch, redact_text

RUNS_DIR_VAR = "STEPS_RUNS_DIR"
SECRET_VAR_PREFIX = "STEPS_SECRET_"
RUNS_ELSEWHERE = f"pass --runs-dir (or set ${RUNS_DIR_VAR})"


def runs_root(explicit: str | Path | None, env: Mapping[str, str], cwd: Path) -> Path:
    """`--runs-dir`, else `$STEPS_RUNS_DIR`, else `./runs`."""
    root = explicit or env.get(RUNS_DIR_VAR) or "runs"
    return (cwd / Path(root).expanduser()).resolve()


REGISTRY_DIR_VAR = "STEPS_REGISTRY_DIR"  # a pipeline's stages register where it was started


def registry_root(explicit: str | Path | None, env: Mapping[str, str], cwd: Path) -> Path:
    """`$STEPS_REGISTRY_DIR` (set by `pipeline run` for its stages), else the runs root."""
    shared = env.get(REGISTRY_DIR_VAR)
    return Path(shared).resolve() if shared else runs_root(explicit, env, cwd)


def plan_run_dir(root: Path, step_id: str) -> Path:
    """A new, unique folder name: UTC time to the second plus a hash of the time and process."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = root / step_id
    seed = f"{step_id}{time.time_ns()}{os.getpid()}".encode()
    for i in range(100):
        digest = hashlib.sha256(seed + str(i).encode()).hexdigest()[:8]
        path = base / f"{stamp}-{digest}"
        if not path.exists():
            return path
    return base / f"{stamp}-{os.getpid()}"  # pragma: no cover - 100 collisions in one second


def scrub_config(cfg: Any, values: Mapping[str, str]) -> dict[str, str]:
    """Replace literal secrets in a DictConfig by env references; returns the env to pass.

    A literal scalar at or under a secret key (not a bool, null or switch) or a token-shaped
    string becomes `${oc.env:STEPS_SECRET_<DOTTED_KEY>}` (a number wrapped in `oc.decode`, so it
    keeps its type); a secret variable's value becomes `${oc.env:<its variable>}`.
    """
    from omegaconf import DictConfig, ListConfig

    from runners.omegaconf_internals import child_node, is_interpolation, is_opaque, raw_value

    extra: dict[str, str] = {}

    def lift(node: Any, k: Any, dotted: str, raw: Any) -> None:
        var = SECRET_VAR_PREFIX + "".join(c if c.isalnum() else "_" for c in dotted).upper()
        extra[var] = str(raw)
        ref = "${oc.env:" + var + "}"
        node[k] = ref if isinstance(raw, str) else "${oc.decode:" + ref + "}"

    def walk(node: Any, path: str, secret: bool) -> None:
        items = node.items_ex(resolve=False) if isinstance(node, DictConfig) else enumerate(node)
        for k, _ in list(items):
            child = child_node(node, k)
            key = str(k)
            dotted = f"{path}.{key}" if path else key
            under = secret or (isinstance(node, DictConfig) and is_secret_key(key))
            if isinstance(child, (DictConfig, ListConfig)):
                if not is_opaque(child):
                    walk(child, dotted, under)
                continue
            raw = raw_value(child)
            if is_interpolation(child) or raw is None or isinstance(raw, bool) or raw == "???":
                continue
            if isinstance(raw, str) and raw in values:  # a secret variable's value: refer to it
                node[k] = "${oc.env:" + values[raw] + "}"
            elif (under and (secret or not is_switch(raw))) or (
                isinstance(raw, str) and has_token(raw)
            ):
                lift(node, k, dotted, raw)
            elif isinstance(raw, str):
                new = raw
                for value in sorted(values, key=len, reverse=True):
                    new = new.replace(value, "${oc.env:" + values[value] + "}")
                if new != raw:
                    node[k] = new

    walk(cfg, "", False)
    return extra


def write_run_dir(
    run_dir: Path,
    files: Mapping[str, str],
    materialize: Callable[[Path], None] | None = None,
) -> Path:
    """Write every file (and derived data) into a hidden temp folder, then rename it into place;
    E-RUN-DIR (exit 2) when it cannot, the folders this call created removed again."""
    with writing(existing_folder(run_dir), "E-RUN-DIR", "the run dir", RUNS_ELSEWHERE) as made:
        made += make_folders(run_dir.parent)
        staging = run_dir.parent / f".{run_dir.name}.tmp-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            if materialize is not None:
                materialize(staging)
            for name, text in files.items():
                (staging / name).write_text(text, encoding="utf-8")
            os.replace(staging, run_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return run_dir


class Unlocated(BaseModel):
    """Why a job's cluster is unknown (runners/launch/records.py): nothing is asked about it."""

    message: str
    fix: str | None = None


class JobRecord(BaseModel):
    """run.json's `job`, written by a backend before it submits and completed after. Read
    through runners/launch/records.py, which takes where the job runs from its profile, never
    from the record. Unknown keys are kept, so a record round-trips unchanged."""

    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)

    executor: str  # a backend of runners/launch/backends/ (located by records.locate)
    profile: str | None = None  # its name in env.toml
    host: str | None = None  # Slurm: the login host; None: this machine
    ssh_options: list[str] = []
    remote_dir: str | None = None
    address: str | None = None  # Ray: the dashboard address
    job_id: str | None = None  # Slurm's job id (None until sbatch answers); Ray's submission id
    job_name: str | None = None  # Slurm: unique, so a lost submission is found by name
    job_dir: str | None = None  # the run dir as the job sees it
    log_template: str | None = None  # Slurm: log_path with `%j` for the job id
    log_path: str | None = None
    batch_output: str | None = None  # Slurm: slurm-<id>.out
    submitted_utc: str | None = None
    state: str | None = None  # SUBMITTING, then the cluster's; UNKNOWN only as shown
    exit_code: int | None = None
    secrets_file: str | None = None  # the job's 0600 secrets file, removed once it ended
    # In the order the backends add them, which `dump` keeps (run.json as it always was).
    submit_note: str | None = None  # the submission failed but the cluster holds the job
    last_known_state: str | None = None  # with state UNKNOWN: the state before
    reason: str | None = None  # why the state is what it is (a refusal, no answer)
    message: str | None = None  # Ray's message about the job
    unlocated: Unlocated | None = None  # set by records.locate: its cluster is unknown
    log_note: str | None = None  # `logs`: why the log shown is not the driver log

    def dump(self) -> dict[str, Any]:
        """The record as run.json holds it: what was read or set, unknown keys included."""
        return self.model_dump(mode="json", exclude_unset=True)

    def forget(self, *names: str) -> None:
        """Drop fields from the record (run.json no longer holds them): unset, not None."""
        for name in names:
            setattr(self, name, type(self).model_fields[name].default)
            self.__pydantic_fields_set__.discard(name)


class ArtifactRecord(BaseModel):
    """An input or output of the run, bound to a path or a hub id."""

    name: str
    type: str
    config_key: str
    value: str
    is_path: bool = True


class LaunchRecord(BaseModel):
    """run.json's `launch`: the profile a cluster run was launched with."""

    model_config = ConfigDict(extra="allow")

    executor: str
    profile: str
    env_file: str | None = None
    host: str | None = None


class RunRecord(BaseModel):
    """run.json: who ran what, where, with which inputs and findings."""

    model_config = ConfigDict(extra="allow")

    step: str
    version: str
    argv: list[str] = []
    cwd: str = ""
    config_sources: list[str] = []
    env: list[str] = []  # names only, never values
    inputs: list[ArtifactRecord] = []
    outputs: list[ArtifactRecord] = []
    findings: list[dict[str, Any]] = []
    command: list[str] | None = None
    command_cwd: str | None = None
    nemo_rl_dir: str | None = None
    nemo_rl_version: dict[str, Any] | None = None
    config_env: dict[str, dict[str, Any]] = {}  # variable -> {value, source}
    created_utc: str = ""
    launch: LaunchRecord | None = None
    job: JobRecord | None = None
    chain: dict[str, Any] | None = None
    final_progress: dict[str, Any] | None = None


def run_record(
    *,
    step_id: str,
    version: str,
    argv: list[str],
    cwd: Path,
    sources: list[Path],
    env_names: list[str],
    inputs: list[Any],
    outputs: list[Any],
    findings: list[Any],
    command: list[str] | None,
    command_cwd: Path | str | None,
    nemo_rl_dir: Path | None,
    values: Mapping[str, str],
    launch: dict | None = None,
    nemo_rl_version: dict | None = None,
    config_env: dict | None = None,
) -> str:
    """`run.json`: environment variable names, never values (`config_env`: the plain,
    non-secret ones the config read, as pinned into config.yaml)."""
    art = functools.partial(ArtifactRecord.model_validate, from_attributes=True)

    record = RunRecord(
        step=step_id,
        version=version,
        argv=argv,
        cwd=str(cwd),
        config_sources=[str(p) for p in sources],
        env=sorted(env_names),
        inputs=[art(a) for a in inputs],
        outputs=[art(a) for a in outputs],
        findings=[f.to_dict() for f in findings],
        command=command,
        command_cwd=str(command_cwd) if command_cwd else None,
        nemo_rl_dir=str(nemo_rl_dir) if nemo_rl_dir else None,
        nemo_rl_version=nemo_rl_version,
        config_env=config_env or {},
        created_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    if launch is not None:
        record.launch = LaunchRecord.model_validate(launch)
    text = json.dumps(record.model_dump(mode="json", exclude_unset=True), indent=2, default=str)
    return redact_text(text, values) + "\n"


RECORD = "run.json"


def read_record(run_dir: Path) -> dict:
    """A run dir's run.json (E-RUN-RECORD, exit 2, when absent or unreadable)."""
    from catalog.record_file import read_json, reason

    path = run_dir / RECORD
    try:
        return read_json(path)
    except (OSError, ValueError) as exc:
        from catalog.errors import StepsError

        raise StepsError(
            "E-RUN-RECORD",
            f"cannot read the run record: {reason(exc)}",
            path=str(path),
            fix="name a run dir written by `python -m steps run` (see `python -m steps jobs`)",
            exit_code=2,
        ) from None


def update_record(run_dir: Path, **changes: Any) -> dict:
    """Rewrite run.json with `changes` merged in, atomically (never half-written)."""
    record = read_record(run_dir)
    record.update(changes)
    with writing(run_dir, "E-RUN-DIR", "the run record", RUNS_ELSEWHERE):
        write_atomic(run_dir / RECORD, json.dumps(record, indent=2, default=str) + "\n")
    return record
