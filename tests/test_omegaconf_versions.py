"""Our code under each OmegaConf release it supports (2.2 to 2.4; NeMo-RL pins 2.3.1): what we use
of OmegaConf beyond its public API is in one module, every step's dry run decides the same under
2.2.3 and 2.4.0 as under the venv's 2.3.1, and a staged job refuses a release outside the range
with exit 2 naming it. Each release is a folder put first on PYTHONPATH (tests/omegaconf_sites.py,
made offline from wheels `.ci/run` fetches; the tests skip, naming the command, without them).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import sandbox_env
from omegaconf_sites import FETCH, site
from run_fixtures import REPO, clean_env, fake_checkout

from runners.launch import job_code
from runners.omegaconf_internals import SUPPORTED

OWNER = REPO / "runners" / "omegaconf_internals.py"
PRIVATE = re.compile(
    r"omegaconf\.(?:_\w+|nodes|base|grammar\w*|basecontainer|dictconfig|listconfig)\b"
    r"|\._(?:get_node|set_value|is_missing|is_none|is_interpolation|value|dereference_node|"
    r"metadata|get_parent|get_flag|set_flag|content|parent)\b"
    r"|register_new_resolver|get_yaml_loader"
)


def test_omegaconf_internals_are_used_in_one_module_only():
    found = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for package in ("steps", "runners", "catalog")
        for path in sorted((REPO / package).rglob("*.py"))
        if path != OWNER
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line) and "self._" not in line
    ]
    assert found == []
    assert PRIVATE.search(OWNER.read_text(encoding="utf-8"))  # the pattern sees what it guards


def release_site(release: str) -> Path:
    found = site(release)
    if found is None:
        pytest.skip(f"no omegaconf {release} wheel for the lab: {FETCH}")
    return found


# Every step's `tiny` and `default` dry run, in one process: exit code, verdict, resolved
# config and findings, as JSON on stdout (paths of this run's own folders left out).
DRY_RUNS = """
import contextlib, io, json, sys
from pathlib import Path
import omegaconf
from steps.cli import main
root, checkout = sys.argv[1], sys.argv[2]
out = {"omegaconf": omegaconf.__version__, "runs": {}}
for step in sorted(p.parent.parent for p in Path("steps").glob("*/**/config/tiny.yaml")):
    step_id = str(step.relative_to("steps"))
    for config in ("tiny", "default"):
        text = io.StringIO()
        with contextlib.redirect_stdout(text), contextlib.redirect_stderr(io.StringIO()):
            code = main(["run", step_id, "-c", config, "--dry-run", "--json", "--nemo-rl",
                         checkout, "--runs-dir", root + "/runs"])
        doc = json.loads(text.getvalue())
        out["runs"][f"{step_id} -c {config}"] = {
            "exit": code, "ok": doc.get("ok"), "config": doc.get("config"),
            "findings": doc.get("findings"),
        }
print(json.dumps(out))
"""


def dry_runs(tmp_path: Path, release_dir: Path | None) -> dict:
    folder = tmp_path / "dry"
    checkout = fake_checkout(folder / "nemo-rl")
    env = clean_env(folder, TORCH_CUDA_ARCH_LIST="9.0")  # as NeMo-RL's container sets it
    env.update(sandbox_env(folder))  # home, caches, outputs: under the folder left out below
    env["PYTHONPATH"] = os.pathsep.join([*([str(release_dir)] if release_dir else []), str(REPO)])
    proc = subprocess.run(
        [sys.executable, "-c", DRY_RUNS, str(folder), str(checkout)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout.replace(str(folder), "<root>")
    return json.loads(text)


@pytest.fixture(scope="module")
def ours(tmp_path_factory) -> dict:
    """The dry runs under the venv's OmegaConf (NeMo-RL's 2.3 line)."""
    return dry_runs(tmp_path_factory.mktemp("venv"), None)


@pytest.mark.parametrize("release", ["2.2.3", "2.4.0"])
def test_every_steps_dry_run_decides_under_a_release_as_under_nemo_rls(tmp_path, release, ours):
    theirs = dry_runs(tmp_path, release_site(release))
    assert (theirs["omegaconf"], ours["omegaconf"][:3]) == (release, "2.3")
    assert len(ours["runs"]) >= 12 and any(r["ok"] for r in ours["runs"].values())
    for name, run in ours["runs"].items():
        assert theirs["runs"][name] == run, name


def staged(tmp_path: Path) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    job_code.stage(folder)
    return folder / job_code.CODE


def fake_release(folder: Path, version: str) -> Path:
    """A folder whose OmegaConf metadata says `version` (the package itself is the venv's)."""
    meta = folder / f"omegaconf-{version}.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: omegaconf\nVersion: {version}\n")
    return folder


@pytest.mark.parametrize("version", ["2.1.2", "2.5.0", "3.0.0rc1"])
def test_a_staged_job_refuses_an_omegaconf_outside_the_range_with_exit_2_naming_it(
    tmp_path, version
):
    env = clean_env(tmp_path, PYTHONPATH=str(fake_release(tmp_path / "site", version)))
    res = subprocess.run(
        [sys.executable, str(staged(tmp_path)), "list"], capture_output=True, text=True, env=env
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    low, below = (".".join(map(str, v)) for v in SUPPORTED)
    assert f"omegaconf {version} is not supported" in res.stderr
    assert f"needs omegaconf>={low},<{below} in the Python that runs it" in res.stderr
    assert "steps staged with this job needs" in res.stderr  # what diagnose names job_code_missing


@pytest.mark.parametrize("release", ["2.2.3", "2.4.0"])
def test_a_staged_job_runs_under_each_supported_release(tmp_path, release):
    env = clean_env(tmp_path, PYTHONPATH=str(release_site(release)))
    code = staged(tmp_path)
    probe = [sys.executable, "-c", "import omegaconf; print(omegaconf.__version__)"]
    assert subprocess.run(probe, capture_output=True, text=True, env=env).stdout.strip() == release
    res = subprocess.run([sys.executable, str(code), "list"], capture_output=True, text=True,
                         env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "data_prep/rl_prep" in res.stdout and "Warning" not in res.stderr
