"""remote_probe runs on a login node that has nothing of ours: Python 3.8's syntax and standard
library only; its Slurm parsers read what the commands print (values with spaces and `=`)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from runners.launch import remote_probe
from runners.launch.shell import Shell

SOURCE = Path(remote_probe.__file__).read_text(encoding="utf-8")


def test_the_program_is_python_3_8_and_imports_only_the_standard_library():
    tree = ast.parse(SOURCE, feature_version=(3, 8))
    imported = {
        (alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_scontrol_one_line_records_keep_values_with_spaces_and_equals_signs():
    line = (
        "JobId=42 JobName=steps x JobState=RUNNING Reason=None ExitCode=0:0 RunTime=1-02:03:04 "
        "NumNodes=2 TRES=cpu=4,mem=8G,node=2 Command=/opt/a b/ray.sub WorkDir=/x y\n"
        "PartitionName=batch Default=YES\n"
    )
    job, part = remote_probe.parse_one_line_records(line)
    assert job["JobName"] == "steps x" and job["JobState"] == "RUNNING"
    assert job["TRES"] == "cpu=4,mem=8G,node=2" and job["Command"] == "/opt/a b/ray.sub"
    assert job["WorkDir"] == "/x y" and part == {"PartitionName": "batch", "Default": "YES"}


def test_parsable2_columns_keep_a_last_field_that_holds_the_separator():
    rows = remote_probe.parse_columns("1|COMPLETED|0:0\n2|CANCELLED by 0|a|b\n", ["id", "st", "x"])
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
    script = tmp_path / "remote_probe.py"
    script.write_text(SOURCE)
    proc = subprocess.run(
        [sys.executable, "-I", str(script), '{"op": "environment", "switches": ["1"]}'],
        capture_output=True, text=True, env={"HF_HUB_DISABLE_TOKEN": "1", "X": "y"}, check=True,
    )  # fmt: skip
    assert '"HF_HUB_DISABLE_TOKEN": true' in proc.stdout and '"X": false' in proc.stdout
