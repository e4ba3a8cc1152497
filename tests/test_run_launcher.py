"""A local launch is checked before it starts: the launcher starts a Python, and that Python holds
the torch / transformers / ray (/ vllm) versions the checkout's pyproject.toml pins.

Real components: the `uv` binary from PyPI (offline, no Python downloads), real venvs whose
site-packages hold the distributions' metadata, the stand-in NeMo-RL checkout of the run tests.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import venv
from pathlib import Path

import pytest
from run_fixtures import (
    RECORD_VAR,
    REPO,
    clean_env,
    dpo_step,
    fake_checkout,
    fake_uv,
    only_run_dir,
    steps_cli,
    steps_run,
)

from runners.launch.local import Launcher, LocalLaunch
from runners.nemo_rl.pins import pins
from runners.preflight import PreflightContext
from runners.preflight.interpreter import local_interpreter

UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
needs_uv = pytest.mark.skipif(UV is None, reason="the test extra's `uv` package is not installed")

# NeMo-RL v0.7.0's pins for the packages it refuses or breaks on (its pyproject.toml, shortened).
PYPROJECT = """\
[project]
name = "nemo-rl"
version = "0.7.0"
requires-python = "{python}"
dependencies = [
  "setuptools",
  "torch==2.11.0",
  "ray[default]>=2.55.1",
  "transformers>=5.5.0,<5.9.0",
]

[project.optional-dependencies]
vllm = [
  "vllm @ https://github.com/vllm-project/vllm/releases/download/v0.20.0/vllm-0.20.0-cp38-abi3-manylinux_2_35_x86_64.whl ; sys_platform == 'linux' and platform_machine == 'x86_64'",
  "vllm @ https://github.com/vllm-project/vllm/releases/download/v0.20.0/vllm-0.20.0-cp38-abi3-manylinux_2_35_aarch64.whl ; sys_platform == 'linux' and platform_machine == 'aarch64'",
  "vllm==0.20.0 ; sys_platform != 'linux' or (platform_machine != 'aarch64' and platform_machine != 'x86_64')",
]

[tool.uv]
override-dependencies = ["torch==2.11.0"]
"""  # noqa: E501 (upstream's requirement lines, as written)
NEMO_RL_PYTHON = ">=3.13.13,<3.14"  # what v0.7.0 asks for; nothing here provides it
ANY_PYTHON = ">=3.10"  # what every interpreter that runs these tests satisfies


def _setup(tmp_path: Path, python: str = ANY_PYTHON, pinned: bool = False):
    """A step, a stand-in checkout with uv.lock and a pyproject asking for `python` (and, when
    `pinned`, NeMo-RL's package pins), a working folder and a clean environment."""
    catalog = tmp_path / "catalog"
    dpo_step(catalog)
    checkout = fake_checkout(tmp_path / "nemo-rl", uv_lock=True)
    text = PYPROJECT.format(python=python)
    if not pinned:
        text = text[: text.index("dependencies")] + "dependencies = []\n"
    (checkout / "pyproject.toml").write_text(text, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    env = clean_env(tmp_path, **{RECORD_VAR: str(tmp_path / "record.json")})
    return catalog, checkout, work, env


def _offline_uv(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """The real uv on PATH, offline, finding Pythons only on PATH (no pyenv, no downloads)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "uv").symlink_to(UV)
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX", "UV_PYTHON", "UV_PROJECT_ENVIRONMENT"):
        env.pop(name, None)
    return {
        **env,
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "UV_OFFLINE": "1",
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_PYTHON_INSTALL_DIR": str(tmp_path / "uv-pythons"),
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
        "UV_NO_CONFIG": "1",
    }


def _args(catalog: Path, checkout: Path, tmp_path: Path, *more: str) -> list[str]:
    return [
        "rl/fake_dpo",
        "--catalog",
        str(catalog),
        "--nemo-rl",
        str(checkout),
        "--runs-dir",
        str(tmp_path / "runs"),
        *more,
    ]


def _findings(stdout: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in json.loads(stdout)["findings"]:
        out.setdefault(f["code"], []).append(f)
    return out


@needs_uv
def test_a_uv_that_cannot_find_nemo_rls_python_stops_the_run_before_exec(
    tmp_path, steps_in_process
):
    catalog, checkout, work, env = _setup(tmp_path, python=NEMO_RL_PYTHON)
    env = _offline_uv(tmp_path, env)
    argv = _args(catalog, checkout, tmp_path, "--dry-run", "--json")
    dry = steps_in_process("run", *argv, cwd=work, env=env)
    assert dry.returncode == 1, dry.stderr
    (finding,) = _findings(dry.stdout)["E-LAUNCHER"]
    assert (
        "launcher `uv run python` (the checkout has uv.lock and uv is on PATH)"
        in (finding["message"])
    )
    assert "No interpreter found for Python >=3.13.13, <3.14" in finding["message"]
    assert "--launcher" in finding["fix"] and "uv python install" in finding["fix"]
    # A real run stops at preflight: exit 1, the script never starts (nor is exec'd into).
    real = steps_in_process("run", *_args(catalog, checkout, tmp_path), cwd=work, env=env)
    assert real.returncode == 1
    assert "E-LAUNCHER" in real.stderr
    assert not (tmp_path / "record.json").exists()


@needs_uv
def test_launcher_flag_chooses_the_interpreter_over_uv_lock(tmp_path):
    catalog, checkout, work, env = _setup(tmp_path)
    env = _offline_uv(tmp_path, env)
    argv = _args(catalog, checkout, tmp_path, "--launcher", sys.executable)
    proc = steps_run(*argv, cwd=work, env=env)  # a child: the run execs into the launcher
    assert proc.returncode == 0, proc.stderr
    config_yaml = only_run_dir(tmp_path / "runs", "rl/fake_dpo") / "config.yaml"
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["orig_argv"] == [
        sys.executable,
        "examples/run_dpo.py",
        "--config",
        str(config_yaml),
    ]


def test_a_launcher_whose_python_the_checkout_does_not_accept_stops_the_run(
    tmp_path, steps_in_process
):
    # v0.7.0 asks for Python >=3.13.13: an interpreter outside requires-python fails at import.
    catalog, checkout, work, env = _setup(tmp_path, python=NEMO_RL_PYTHON)
    argv = _args(catalog, checkout, tmp_path, "--launcher", sys.executable, "--dry-run", "--json")
    dry = steps_in_process("run", *argv, cwd=work, env=env)
    assert dry.returncode == 1, dry.stderr
    (finding,) = _findings(dry.stdout)["E-LAUNCHER"]
    here = platform.python_version()
    assert finding["message"] == (
        f"launcher `{sys.executable}` starts Python {here} ({sys.executable}); the checkout's "
        'pyproject.toml asks for `requires-python = ">=3.13.13,<3.14"`'
    )
    assert finding["location"] == f"{checkout / 'pyproject.toml'}:4"
    assert "--launcher" in finding["fix"] and "a Python >=3.13.13,<3.14" in finding["fix"]
    argv = _args(catalog, checkout, tmp_path, "--launcher", sys.executable)
    real = steps_in_process("run", *argv, cwd=work, env=env)
    assert real.returncode == 1 and "E-LAUNCHER" in real.stderr
    assert not (tmp_path / "record.json").exists()  # the script never started


def test_a_local_profile_launcher_is_the_launcher(tmp_path, monkeypatch, capsys):
    catalog, checkout, work, env = _setup(tmp_path)
    broken = tmp_path / "no-such-python"
    (work / "env.toml").write_text(f'[here]\nexecutor = "local"\nlauncher = "{broken}"\n')
    argv = _args(catalog, checkout, tmp_path, "--run", "here", "--dry-run", "--json")
    out = steps_cli(monkeypatch, capsys, "run", *argv, cwd=work, env=env)
    assert out.returncode == 1
    (finding,) = _findings(out.stdout)["E-LAUNCHER"]
    assert f"launcher `{broken}` (profile [here])" in finding["message"]
    assert "is not installed or not on PATH" in finding["message"]
    # `--launcher` wins over the profile's.
    again = steps_cli(
        monkeypatch, capsys, "run", *argv, "--launcher", sys.executable, cwd=work, env=env
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["command"][0] == sys.executable


@needs_uv
def test_a_uv_that_finds_a_python_passes_the_probe(tmp_path, monkeypatch, capsys):
    catalog, checkout, work, env = _setup(tmp_path, python=">=3.8")
    env = _offline_uv(tmp_path, env)
    argv = _args(catalog, checkout, tmp_path, "--dry-run", "--json")
    out = steps_cli(monkeypatch, capsys, "run", *argv, cwd=work, env=env)
    assert out.returncode == 0, out.stdout
    doc = json.loads(out.stdout)
    assert doc["command"][:3] == ["uv", "run", "python"]
    # uv installs the checkout's lock at launch, so the probe's (empty) venv is not judged.
    assert "E-PACKAGE-VERSION" not in _findings(out.stdout)


def test_the_probe_is_cached_per_launcher_checkout_and_lock(tmp_path, steps_in_process):
    catalog, checkout, work, env = _setup(tmp_path, python=">=3.8")
    uv_record = tmp_path / "uv.json"
    fake_uv(tmp_path / "bin", uv_record)  # records each start: the cache, not uv, is under test
    env["PATH"] = f"{tmp_path / 'bin'}:{env['PATH']}"
    argv = _args(catalog, checkout, tmp_path, "--dry-run")
    # the launch environment the child below has (steps_run puts the checkout first)
    here = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))}
    assert steps_in_process("run", *argv, cwd=work, env=here).returncode == 0
    assert json.loads(uv_record.read_text())["argv"][3] == "-c"  # the probe ran
    uv_record.unlink()
    assert steps_run(*argv, cwd=work, env=env).returncode == 0  # a child: the cache on disk
    assert not uv_record.exists()  # answered from the cache
    lock = checkout / "uv.lock"
    os.utime(lock, ns=(lock.stat().st_atime_ns, lock.stat().st_mtime_ns + 10**9))
    assert steps_in_process("run", *argv, cwd=work, env=here).returncode == 0
    assert uv_record.exists()  # a changed uv.lock probes again


def _venv_with(root: Path, packages: dict[str, str]) -> Path:
    """A real venv whose site-packages holds these distributions (metadata only)."""
    venv.create(root, with_pip=False, symlinks=True)
    site = root / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    for name, version in packages.items():
        _install(site, name, version)
    return root / "bin" / "python"


def _install(site: Path, name: str, version: str) -> None:
    for old in site.glob(f"{name}-*.dist-info"):
        shutil.rmtree(old)
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


GOOD = {"torch": "2.11.0+cu130", "transformers": "5.8.1", "ray": "2.55.1"}


def test_a_too_new_transformers_is_an_error_naming_both_versions(tmp_path, monkeypatch, capsys):
    catalog, checkout, work, env = _setup(tmp_path, pinned=True)
    python = _venv_with(tmp_path / "venv", {**GOOD, "transformers": "5.17.0"})
    argv = _args(catalog, checkout, tmp_path, "--launcher", str(python), "--dry-run", "--json")
    out = steps_cli(monkeypatch, capsys, "run", *argv, cwd=work, env=env)
    assert out.returncode == 1
    (finding,) = _findings(out.stdout)["E-PACKAGE-VERSION"]  # torch (+cu130) and ray pass
    assert finding["message"].startswith(f"transformers 5.17.0 in {python} (Python ")
    assert finding["message"].endswith(
        "does not satisfy the checkout's `transformers>=5.5.0,<5.9.0`"
    )
    assert finding["location"] == f"{checkout / 'pyproject.toml'}:9"
    assert f"{python} -m pip install 'transformers>=5.5.0,<5.9.0'" in finding["fix"]
    # Installing a matching one changes site-packages: the cached probe is not reused.
    site = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    _install(site, "transformers", "5.8.1")
    fixed = steps_cli(monkeypatch, capsys, "run", *argv, cwd=work, env=env)
    assert fixed.returncode == 0, fixed.stdout


def _ctx(checkout: Path, python: Path, backend: str | None) -> PreflightContext:
    launch = LocalLaunch(Launcher((str(python),), "--launcher"), checkout, dict(os.environ))
    config = {"policy": {"generation": {"backend": backend} if backend else None}}
    return PreflightContext("rl/x", None, config, nemo_rl_dir=checkout, local_launch=launch)


def test_vllm_is_judged_only_when_generation_uses_it(tmp_path):
    _, checkout, _, _ = _setup(tmp_path, pinned=True)
    python = _venv_with(tmp_path / "venv", {**GOOD, "vllm": "0.19.0"})
    found = list(local_interpreter(_ctx(checkout, python, "vllm")))
    assert [f.code for f in found] == ["E-PACKAGE-VERSION"]
    assert found[0].message.startswith("vllm 0.19.0 in ")
    assert found[0].message.endswith("the checkout's `vllm==0.20.0`")  # from the wheel's name
    assert list(local_interpreter(_ctx(checkout, python, "megatron"))) == []
    assert list(local_interpreter(_ctx(checkout, python, None))) == []


def test_a_missing_package_is_named_with_the_pin(tmp_path):
    _, checkout, _, _ = _setup(tmp_path, pinned=True)
    python = _venv_with(tmp_path / "venv", {"torch": "2.11.0", "transformers": "5.5.0"})
    (finding,) = local_interpreter(_ctx(checkout, python, None))
    assert finding.message.startswith(f"ray is not installed in {python} (Python ")
    assert finding.message.endswith("the checkout needs `ray[default]>=2.55.1`")


def test_pins_follow_the_checkouts_own_pyproject(tmp_path):
    # v0.6.0 pins transformers exactly and overrides it for uv; the override is what applies.
    old = tmp_path / "v0.6.0"
    old.mkdir()
    (old / "pyproject.toml").write_text(
        '[project]\nname = "nemo-rl"\ndependencies = [\n  "torch==2.10.0",\n'
        '  "transformers==5.3.0",\n]\n[project.optional-dependencies]\n'
        'automodel = ["transformers>=5.3.0"]\n'
        '[tool.uv]\noverride-dependencies = [\n  "transformers==5.3.0",\n]\n'
    )
    found = pins(old, ["torch", "transformers", "ray"], ["automodel"])
    assert [(p.shown, p.line) for p in found["transformers"]] == [("transformers==5.3.0", 11)]
    assert [p.shown for p in found["torch"]] == ["torch==2.10.0"]
    assert "ray" not in found  # not pinned: nothing to compare
    # A wheel URL's marker is evaluated for the interpreter that will run, not this one.
    _, checkout, _, _ = _setup(tmp_path / "new", pinned=True)
    arm = {"sys_platform": "linux", "platform_machine": "aarch64"}
    (pin,) = pins(checkout, ["vllm"], ["vllm"], arm)["vllm"]
    assert "aarch64.whl" in pin.text and pin.shown == "vllm==0.20.0" and pin.line == 15


def test_launcher_flag_replaces_a_cluster_profiles_launcher(tmp_path):
    from runners.kinds import kind_for
    from runners.kinds.base import Prepared, Setting
    from runners.launch.profiles.env_toml import load_profile
    from runners.launch.target import ClusterTarget

    env_toml = tmp_path / "env.toml"
    env_toml.write_text(
        '[c]\nexecutor = "slurm"\nremote_dir = "/shared/runs"\nnemo_rl_dir = "/opt/nemo-rl"\n'
    )
    target = ClusterTarget("c", env_toml, load_profile(env_toml, "c"), {})
    script = Prepared(compiled=None, script="examples/run_dpo.py")  # type: ignore[arg-type]

    def job(launcher: str | None) -> tuple[list[str], str]:
        s = Setting("rl/x", None, tmp_path, [], {}, tmp_path, launcher=launcher, target=target)  # type: ignore[arg-type]
        return kind_for("nemo_rl").job_command(s, script, {}, "/shared/runs/r/config.yaml")

    assert job(None)[0][:3] == ["uv", "run", "python"]  # the profile's default
    argv, cwd = job("/opt/venv/bin/python -X dev")
    assert argv == [
        "/opt/venv/bin/python",
        "-X",
        "dev",
        "examples/run_dpo.py",
        "--config",
        "/shared/runs/r/config.yaml",
    ]
    assert cwd == "/opt/nemo-rl"


def test_the_python_running_steps_is_read_in_process_as_its_child_would_print_it(tmp_path):
    from runners.launch import local
    from runners.nemo_rl.checkout import exec_env

    checkout = tmp_path / "RL"
    (checkout / "nemo_rl").mkdir(parents=True)  # found from the child's first path entry
    (checkout / "nemo_rl" / "__init__.py").write_text("")
    here = Launcher((sys.executable,), "the Python running steps")
    env = exec_env(checkout, os.environ)  # the checkout first on PYTHONPATH, as a launch has it
    inside = local._this_interpreter(here, checkout, env)
    child = local._run_probe(here, checkout, env, timeout=60)
    assert inside is not None and inside == child and inside.nemo_rl


def test_this_pythons_facts_are_read_once_until_a_folder_of_its_path_changes(tmp_path, monkeypatch):
    from runners.launch import local

    site = tmp_path / "site"
    site.mkdir()
    _install(site, "torch", "9.9")
    monkeypatch.syspath_prepend(str(site))
    first = local._own_facts()
    assert first["packages"]["torch"] == "9.9"
    first["packages"]["torch"] = "changed by its caller"  # a copy: the kept facts stay
    assert local._own_facts()["packages"]["torch"] == "9.9"
    _install(site, "torch", "8.8")  # an install changes its folder: read again
    later = site.stat().st_mtime_ns + 10**9  # as a real install's, not within one clock tick
    os.utime(site, ns=(later, later))
    assert local._own_facts()["packages"]["torch"] == "8.8"


def test_a_launch_that_changes_the_import_path_is_probed_in_its_child(tmp_path):
    from runners.launch import local

    only_there = tmp_path / "site"
    only_there.mkdir()
    _install(only_there, "torch", "9.9")  # a distribution only the launch's PYTHONPATH holds
    here = Launcher((sys.executable,), "the Python running steps")
    env = {**os.environ, "PYTHONPATH": str(only_there)}
    assert local._this_interpreter(here, tmp_path, env) is None
    found = local.probe(here, tmp_path, env)
    assert isinstance(found, local.Interpreter) and found.packages["torch"] == "9.9"
