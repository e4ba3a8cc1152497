"""A Ray cluster with token authentication (Ray 2.5x, RAY_AUTH_MODE=token) on a real local head.

The token is read where Ray's own CLI reads it (here: the sandboxed HOME's ~/.ray/auth_token)
and sent to the dashboard on every call: submit, status, logs, cancel, the dry-run probe. Without
it the dashboard's refusal is E-RAY-AUTH (exit 2, nothing submitted), not an unreachable address.
The token is in no file we write and in no output. One head for the module (slow to start).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from cluster_fixtures import NO_JUDGE, PYTHON, ray_token_head, stand_in_checkout, wait_for  # noqa: F401
from run_fixtures import clean_env
from test_launch_ray import DATA, Lab


def profiles(root: Path, url: str) -> str:
    record = f"{root}/shared/record"
    return f"""[tokenray]
executor = "ray"
address = "{url}"
nemo_rl_dir = "{root}/RL"
launcher = "{PYTHON}"
entrypoint_num_cpus = 0
remote_dir = "{root}/shared"
env = {{ FAKE_NEMO_RL_RECORD = "{record}-ok.json" }}

[ticks]
extends = "tokenray"
env = {{ FAKE_TICKS = "600", FAKE_TICK_SECONDS = "0.2", FAKE_NEMO_RL_RECORD = "{record}-t.json" }}
"""


class TokenLab(Lab):
    """The lab's `cli`, every output kept so the last test can look for the token in it."""

    outputs: ClassVar[list[str]] = []

    def cli(self, *argv: str) -> tuple[int, str, str]:
        code, out, err = super().cli(*argv)
        self.outputs.append(out + err)
        return code, out, err

    def with_home(self, home: Path) -> TokenLab:
        return TokenLab(self.root, self.work, {**self.env, "HOME": str(home)}, self.inputs)


def _home(root: Path, name: str, token: str | None) -> Path:
    home = root / name
    (home / ".ray").mkdir(parents=True)
    if token is not None:
        (home / ".ray" / "auth_token").write_text(token + "\n")
        (home / ".ray" / "auth_token").chmod(0o600)
    return home


@pytest.fixture(scope="module")
def lab(tmp_path_factory, ray_token_head):  # noqa: F811
    root = tmp_path_factory.mktemp("raytokenlab")
    stand_in_checkout(root / "RL")
    shared = root / "shared"
    (shared / "data").mkdir(parents=True)
    for name in ("tiny_train.jsonl", "tiny_val.jsonl"):
        (shared / "data" / name).write_text((DATA / name).read_text())
    work = root / "work"
    work.mkdir()
    (work / "env.toml").write_text(profiles(root, ray_token_head["url"]), encoding="utf-8")
    env = clean_env(root, STEPS_OUTPUT=str(shared / "out"), **NO_JUDGE)
    for name in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        env.pop(name, None)
    inputs = ["--input", f"train={shared}/data/tiny_train.jsonl",
              "--input", f"validation={shared}/data/tiny_val.jsonl"]  # fmt: skip
    base = TokenLab(root, work, env, inputs)
    yield base.with_home(_home(root, "home-with-token", ray_token_head["token"]))


def _head_jobs(url: str, token: str) -> list[str]:
    """The submission ids the head holds, asked with the token as Ray's client sends it."""
    import urllib.request

    auth = {"Authorization": f"Bearer {token}"}
    request = urllib.request.Request(f"{url}/api/jobs/", headers=auth)
    with urllib.request.urlopen(request, timeout=10) as resp:
        return [j.get("submission_id") for j in json.loads(resp.read())]


def test_with_the_token_in_home_a_run_submits_and_completes(lab):
    code, out, err = lab.run("--run", "tokenray")
    assert code == 0, out + err
    assert "driver started: run_dpo.py" in out and "driver done" in out
    job = json.loads(lab.cli("status", "last", "--json")[1])["job"]
    assert job["state"] == "SUCCEEDED" and job["exit_code"] == 0
    code, log, _ = lab.cli("logs", job["job_id"])
    assert code == 0 and "driver done" in log


def test_with_the_token_a_batch_job_shows_its_status_and_logs_and_is_cancelled(lab):
    code, out, err = lab.run("--batch", "ticks")
    assert code == 0, out + err
    job_id = out.split()[0]
    wait_for(lambda: "tick 2" in lab.cli("logs", job_id)[1], timeout=90)
    assert json.loads(lab.cli("status", job_id, "--json")[1])["job"]["state"] == "RUNNING"
    code, out, _ = lab.cli("cancel", job_id)
    assert code == 0 and "stop requested" in out
    wait_for(
        lambda: json.loads(lab.cli("status", job_id, "--json")[1])["job"]["state"] == "STOPPED",
        timeout=90,
    )


def test_without_a_token_the_run_is_refused_naming_where_ray_looks_and_submits_nothing(
    lab,
    ray_token_head,  # noqa: F811
):
    url, token = ray_token_head["url"], ray_token_head["token"]
    before = _head_jobs(url, token)
    bare = lab.with_home(_home(lab.root, "home-without-token", None))
    for argv in (("--run", "tokenray"), ("--batch", "tokenray", "--dry-run")):
        code, out, err = bare.run(*argv)
        assert code == 2, out + err
        assert "E-RAY-AUTH" in err and "E-REMOTE-HOST" not in err
        assert "~/.ray/auth_token" in err and "RAY_AUTH_TOKEN_PATH" in err
        assert "the address is right" in err
    assert _head_jobs(url, token) == before


def test_a_token_that_is_not_the_clusters_is_refused_as_forbidden(lab):
    wrong = lab.with_home(_home(lab.root, "home-wrong-token", "not-the-clusters-token"))
    code, out, err = wrong.run("--batch", "tokenray", "--dry-run")
    assert code == 2, out + err
    assert "E-RAY-AUTH" in err and "Forbidden (403)" in err
    assert "not-the-clusters-token" not in out + err


def test_the_token_is_in_no_file_we_wrote_and_no_output(lab, ray_token_head):  # noqa: F811
    token = ray_token_head["token"].encode()
    assert len(lab.outputs) > 10
    assert not [out for out in lab.outputs if token.decode() in out]
    searched = 0
    for folder in (lab.work, lab.root / "shared"):
        for path in folder.rglob("*"):
            if path.is_file():
                searched += 1
                assert token not in path.read_bytes(), path
    assert searched > 10
