"""What a job carries: the copy of our code staged with its run dir (runners/launch/job_code.py),
and the chain's decision program in it, run by a `python3` that has nothing of ours.

The program is run as the segment script runs it (`python3 -I .../segment_program.py`) by the
oldest Python it supports when one is installed (a pyenv 3.8), else by a bare system python3;
the chain record it reads is the one our pydantic model writes, and the other way round.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_fixtures import bare_python_bin

from runners.chain.record import ChainRecord, Segment, write_chain
from runners.launch import job_code
from runners.launch.job_secrets import SECRETS_FILE
from runners.launch.shell import Shell

OLDEST = sorted(glob.glob("/root/.pyenv/versions/3.8.*/bin/python3"))
NOT_STDLIB = ("pydantic", "yaml", "omegaconf", "msgspec", "xxhash", "pyarrow")


@pytest.fixture
def job_dir(tmp_path) -> Path:
    """A run dir with a chain record (written by our side) and the staged copy of our code."""
    folder = tmp_path / "job"
    folder.mkdir()
    record = ChainRecord(
        state="running", checkpoint_dir=str(tmp_path / "ckpt"), job_name="steps-x",
        log_dir=str(folder), max_steps=4,
        segments=[Segment(n=1, job_id="41", started_utc="2026-11-26T10:00:00.000000Z")],
    )  # fmt: skip
    write_chain(folder, {"step_id": "rl/x"}, record)
    job_code.stage(folder)
    return folder


@pytest.fixture
def python3(tmp_path) -> str:
    """The oldest supported Python when installed, else a python3 without pydantic."""
    return OLDEST[-1] if OLDEST else str(bare_python_bin(tmp_path / "bare") / "python3")


def program(python3: str, job_dir: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
    run = [python3, "-I", job_code.segment_program(str(job_dir)), *argv]
    return subprocess.run(run, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env})


def test_the_staged_copy_holds_sources_and_data_and_no_caches_or_tests(job_dir):
    code = job_dir / job_code.CODE
    assert sorted(p.name for p in code.iterdir()) == ["__main__.py", "catalog", "runners", "steps"]
    assert (code / "catalog" / "codes.toml").is_file()
    assert (code / "runners" / "chain" / "segment_program.py").is_file()
    assert not list(code.rglob("__pycache__")) and not list(code.rglob("*.pyc"))
    assert not (job_dir / ".code.partial").exists()


def test_the_decision_program_imports_nothing_but_the_standard_library(job_dir, python3):
    code = job_dir / job_code.CODE
    probe = (
        f"import sys; sys.path.insert(0, {str(code)!r}); import runners.chain.segment_program; "
        "import runners.monitor.classify; print(sorted(sys.modules))"
    )
    res = subprocess.run([python3, "-I", "-c", probe], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    loaded = {m.split(".")[0] for m in json.loads(res.stdout.replace("'", '"'))}
    assert not loaded & set(NOT_STDLIB), loaded & set(NOT_STDLIB)


def test_end_outside_a_slurm_job_is_a_finding_not_a_traceback(job_dir, python3):
    res = program(python3, job_dir, "end", str(job_dir), "0")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.startswith("E-CHAIN-SEGMENT ") and "Fix: submit the run" in res.stderr


def test_end_records_the_segment_in_the_record_our_model_reads_back(job_dir, python3, tmp_path):
    step = tmp_path / "ckpt" / "step_4"
    step.mkdir(parents=True)
    (step / "training_info.json").write_text('{"epoch": 0, "step": 4, "total_steps": 4}')
    (job_dir / SECRETS_FILE).write_text("")  # an unread secrets file goes when the chain ends
    res = program(python3, job_dir, "end", str(job_dir), "0", SLURM_JOB_ID="41")
    assert res.returncode == 0, res.stderr
    data = json.loads((job_dir / "run.json").read_text())
    assert data["step_id"] == "rl/x"  # the rest of run.json is kept
    chain = ChainRecord.model_validate(data["chain"])
    assert (chain.state, chain.reason) == ("done", "training reached its end")
    seg = chain.segments[0]
    assert (seg.state, seg.exit_code, seg.steps_after) == ("COMPLETED", 0, 4) and seg.seconds
    assert not (job_dir / SECRETS_FILE).exists()


def test_a_staged_copy_run_by_a_python_without_pydantic_names_what_it_lacks(job_dir, tmp_path):
    bare = bare_python_bin(tmp_path / "bare") / "python3"
    res = subprocess.run([str(bare), str(job_dir / job_code.CODE), "list"], capture_output=True,
                         text=True)  # fmt: skip
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "No module named 'pydantic'" in res.stderr  # what diagnose names job_code_missing
    assert "the container's" in res.stderr


def test_the_staged_copy_runs_steps_with_the_packages_a_container_has(job_dir):
    res = subprocess.run([sys.executable, "-I", str(job_dir / job_code.CODE), "list"],
                         capture_output=True, text=True, cwd=job_dir)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "data_prep/rl_prep" in res.stdout


def test_runs_of_one_code_version_link_one_whole_copy_never_a_half_written_one(tmp_path):
    fingerprint = job_code.source()[0]
    killed = job_code.cache_root() / f".{fingerprint}.1.partial"  # a copy killed half way
    (killed / "steps").mkdir(parents=True)
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        run.mkdir()
        job_code.stage(run)
    copies = {(run / job_code.CODE).resolve() for run in runs}
    assert copies == {job_code.cache_root() / fingerprint}
    copy = copies.pop()
    assert sorted(p.name for p in copy.iterdir()) == ["__main__.py", "catalog", "runners", "steps"]
    assert len([p for p in copy.rglob("*") if p.is_file()]) == len(job_code.source()[1]) + 1


def test_a_killed_copys_leftover_is_swept_once_it_is_hours_old(tmp_path):
    stale, fresh = (job_code.cache_root() / f".{name}.99.partial" for name in ("old", "new"))
    for partial in (stale, fresh):
        (partial / "steps").mkdir(parents=True)
    os.utime(stale, (time.time() - 7 * 3600,) * 2)
    job_code.stage(tmp_path)
    assert fresh.is_dir() and not stale.exists()  # a younger one may still be filling


def test_a_copy_that_fails_half_way_leaves_nothing_under_its_name(tmp_path):
    final = tmp_path / "code" / "abc"

    def fill(aside: Path) -> None:
        (aside / "steps").mkdir(parents=True)
        raise OSError("No space left on device")

    with pytest.raises(OSError):
        job_code.write_aside(final, fill)
    assert list((tmp_path / "code").iterdir()) == []


def test_a_remote_dir_gets_the_shared_copy_once_and_each_job_dir_links_it(job_dir, tmp_path):
    remote, shell = tmp_path / "remote", Shell()
    shared = job_code.ship(shell, job_dir, str(remote))
    assert shared == f"{remote}/{job_code.SHARED}/{job_code.source()[0]}"
    for name in ("one", "two"):
        shell.copy_dir(job_dir, str(remote / name), {job_code.CODE: shared})
        assert (remote / name / job_code.CODE).resolve() == Path(shared)
        assert (remote / name / "run.json").is_file()
    (Path(shared) / "marker").write_text("")  # the same version put again copies nothing
    shell.put_once(job_dir / job_code.CODE, shared)
    assert (Path(shared) / "marker").exists()
    assert sorted(p.name for p in remote.iterdir()) == [job_code.SHARED, "one", "two"]
    assert [p.name for p in (remote / job_code.SHARED).iterdir()] == [Path(shared).name]
    res = subprocess.run([sys.executable, "-I", str(remote / "two" / job_code.CODE), "list"],
                         capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0 and "data_prep/rl_prep" in res.stdout, res.stderr
