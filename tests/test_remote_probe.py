"""remote_probe runs on a login node that has nothing of ours: Python 3.8's syntax and standard
library only, sent over ssh as one program with the Slurm queries it imports (slurm_queries),
whose parsers read what the commands print (values with spaces and `=`)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from runners.launch import slurm_queries
from runners.launch.shell import Shell, _probe_source

HERE = Path(slurm_queries.__file__).parent
PROGRAM = ("remote_probe.py", "slurm_queries.py")


@pytest.mark.parametrize("name", PROGRAM)
def test_the_program_is_python_3_8_and_imports_only_the_standard_library(name):
    tree = ast.parse((HERE / name).read_text(encoding="utf-8"), feature_version=(3, 8))
    imported = {
        (alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__", "slurm_queries"}, imported


def test_scontrol_one_line_records_keep_values_with_spaces_and_equals_signs():
    line = (
        "JobId=42 JobName=steps x JobState=RUNNING Reason=None ExitCode=0:0 RunTime=1-02:03:04 "
        "NumNodes=2 TRES=cpu=4,mem=8G,node=2 Command=/opt/a b/ray.sub WorkDir=/x y\n"
        "PartitionName=batch Default=YES\n"
    )
    job, part = slurm_queries.parse_one_line_records(line)
    assert job["JobName"] == "steps x" and job["JobState"] == "RUNNING"
    assert job["TRES"] == "cpu=4,mem=8G,node=2" and job["Command"] == "/opt/a b/ray.sub"
    assert job["WorkDir"] == "/x y" and part == {"PartitionName": "batch", "Default": "YES"}


def test_parsable2_columns_keep_a_last_field_that_holds_the_separator():
    rows = slurm_queries.parse_columns("1|COMPLETED|0:0\n2|CANCELLED by 0|a|b\n", ["id", "st", "x"])
    assert rows == [{"id": "1", "st": "COMPLETED", "x": "0:0"},
                    {"id": "2", "st": "CANCELLED by 0", "x": "a|b"}]  # fmt: skip


def test_a_slurm_command_that_does_not_answer_is_a_reason_not_a_wait(tmp_path):
    """`scontrol` here sleeps; the call bound ends it and the job is UNKNOWN with why."""
    slow = tmp_path / "bin"
    slow.mkdir()
    for tool in ("scontrol", "sacct"):
        (slow / tool).write_text("#!/bin/sh\nsleep 30\n")
        (slow / tool).chmod(0o755)
    env = {"PATH": f"{slow}:/usr/bin:/bin", "STEPS_SLURM_CALL_SECONDS": "0.5"}
    answer = Shell(env=env).ask(
        {"op": "states", "jobs": [{"id": "7", "name": "", "out": ""}], "terminal": []}, "states"
    )
    assert answer["rows"] == [
        {"id": "7", "state": "UNKNOWN", "why": "scontrol did not answer within 0.5 s"}
    ]


def test_the_program_runs_standalone_with_the_request_as_its_argument(tmp_path):
    for name in PROGRAM:
        (tmp_path / name).write_text((HERE / name).read_text(encoding="utf-8"))
    proc = subprocess.run(
        [sys.executable, "-I", str(tmp_path / "remote_probe.py"),
         '{"op": "environment", "switches": ["1"]}'],
        capture_output=True, text=True, env={"HF_HUB_DISABLE_TOKEN": "1", "X": "y"}, check=True,
    )  # fmt: skip
    assert '"HF_HUB_DISABLE_TOKEN": true' in proc.stdout and '"X": false' in proc.stdout


def test_the_text_sent_over_ssh_is_the_whole_program_and_writes_nothing_there(tmp_path):
    """What `ssh HOST python3 -I -S -` reads: both texts, run from stdin in an empty folder."""
    request = json.dumps(json.dumps({"call": 2, "op": "environment", "switches": ["1"]}))
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-"], input=f"{_probe_source()}\nmain({request})\n",
        cwd=tmp_path, capture_output=True, text=True, env={"X": "1"}, check=True,
    )  # fmt: skip
    assert json.loads(proc.stdout)["env"]["X"] is True and list(tmp_path.iterdir()) == []
