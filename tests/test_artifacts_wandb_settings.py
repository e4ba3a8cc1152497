"""The `[wandb]` table is checked as W&B checks it, before any work, by the dry run and the run
alike (issue 39 case 3, issue 40 item 3): a value W&B refuses is E-WANDB-SETTINGS at its line
(exit 1, nothing prepared), never W&B's UsageError as an internal error after the data was made;
wandb not installed is one warning, and the run registers its outputs without W&B.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_fixtures import clean_env, steps_run


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return clean_env(tmp_path, STEPS_OUTPUT=str(tmp_path / "out"),
                     STEPS_RUNS_DIR=str(tmp_path / "runs"), WANDB_MODE="offline",
                     WANDB_SILENT="true", **extra)  # fmt: skip


def _both(
    tmp_path: Path, env: dict[str, str], cli=None, logs=False
) -> list[tuple[int, list, dict]]:
    """(exit code, findings, document) of the dry run, then of the run: in this process with
    `cli` (steps_in_process), else as children. A run that `logs` to W&B is a child: wandb.init
    keeps a service process and hooks for the life of the process that called it."""
    out = []
    for dry in (["--dry-run"], []):
        argv = ("data_prep/rl_prep", "-c", "tiny", "--json", *dry)
        if cli is None or (logs and not dry):
            proc = steps_run(*argv, cwd=tmp_path, env=env)
        else:
            proc = cli("run", *argv, cwd=tmp_path, env=env)
        assert "Traceback" not in proc.stderr, proc.stderr
        doc = json.loads(proc.stdout)
        out.append((proc.returncode, doc.get("findings", []), doc))
    return out


@pytest.mark.parametrize(
    ("table", "key", "says"),
    [
        ('project = "a:b"', "project", "holds :"),
        ('project = "${oc.env:STEPS_TEST_WB_PROJECT}"', "project", "$STEPS_TEST_WB_PROJECT"),
        ('project = "' + "p" * 129 + '"', "project", "129 characters"),
    ],
    ids=["colon", "unset_variable", "too_long"],
)
def test_a_wandb_value_w_and_b_refuses_is_a_finding_at_its_line_before_any_work(
    tmp_path, table, key, says, steps_in_process
):
    (tmp_path / "env.toml").write_text(f'[cli]\nx = 1\n\n[wandb]\nentity = "team"\n{table}\n')
    for rc, findings, _ in _both(tmp_path, _env(tmp_path), steps_in_process):
        [f] = [f for f in findings if f["code"] == "E-WANDB-SETTINGS"]
        assert rc == 1 and f["line"] == 6 and f["key"] == f"wandb.{key}", findings
        assert says in f["message"] and f["path"] == str(tmp_path / "env.toml")
    assert not (tmp_path / "out").exists()  # refused before the data was prepared


def test_an_oc_env_wandb_value_that_is_set_is_used(tmp_path, steps_in_process):
    pytest.importorskip("wandb")
    (tmp_path / "env.toml").write_text('[wandb]\nproject = "${oc.env:STEPS_TEST_WB_PROJECT}"\n')
    env = _env(tmp_path, STEPS_TEST_WB_PROJECT="nano3")
    (rc, findings, _), (run_rc, _, doc) = _both(tmp_path, env, steps_in_process, logs=True)
    assert (rc, run_rc) == (0, 0), findings
    assert doc["result"]["artifacts"]["wandb"]["project"] == "nano3"


def test_wandb_not_installed_is_one_warning_and_the_run_registers_without_it(tmp_path):
    blocker = tmp_path / "no_wandb"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text('import sys\nsys.modules["wandb"] = None\n')
    (tmp_path / "env.toml").write_text('[wandb]\nproject = "nano3"\n')
    env = _env(tmp_path, PYTHONPATH=str(blocker))
    results = _both(tmp_path, env)  # children: their sitecustomize hides wandb from the start
    for rc, findings, _ in results:
        assert rc == 0, findings
        [f] = [f for f in findings if "WANDB" in f["code"]]
        assert (f["code"], f["line"]) == ("W-WANDB-MISSING", 1)
    report = results[1][2]["result"]["artifacts"]
    assert len(report["registered"]) == 1 and "not installed" in report["wandb"]["skipped"]
