"""Every test runs in a sandbox: home, caches, W&B, Hugging Face, outputs and run dirs point
into a fresh temporary folder, and the variables that would point the code at the developer's
own catalog, NeMo-RL checkout or cluster are unset. Nothing is written to the repository or
the real home.

The sandbox sits beside `tmp_path` (not inside it), so tests that assert what their `tmp_path`
holds see only their own files; only run dirs go to `tmp_path/runs`, where a test that runs from
`cwd=tmp_path` expects them (nothing creates it unless a run is written). Module-level code
(collection, e.g. a `discover()` at import) runs in a session-wide sandbox set up before any
test module is imported.
"""

from __future__ import annotations

import compileall
import gc
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SANDBOXED = {
    "HOME": "home",
    "XDG_CACHE_HOME": "home/.cache",
    "XDG_CONFIG_HOME": "home/.config",
    "XDG_DATA_HOME": "home/.local/share",
    "WANDB_DIR": "wandb",
    "WANDB_CACHE_DIR": "home/.cache/wandb",
    "WANDB_DATA_DIR": "home/.local/share/wandb",
    "WANDB_CONFIG_DIR": "home/.config/wandb",
    "HF_HOME": "home/.cache/huggingface",
    "STEPS_OUTPUT": "steps-output",
    "STEPS_CACHE_DIR": "steps-cache",
}
# What NeMo-RL's container sets and a local Megatron launch needs (E-MEGATRON-ARCH-LIST): tests
# launch "here" as if in that container; the rule's own tests give the environment explicitly.
CONTAINER_ENV = {"TORCH_CUDA_ARCH_LIST": "9.0"}
RUNS_DIR = "STEPS_RUNS_DIR"  # tmp_path/runs: where a run from cwd=tmp_path would put them
UNSET = (
    "STEPS_PATH",
    "NEMO_RL_HOME",
    "STEPS_ENV_FILE",
    "RAY_ADDRESS",
    "RAY_API_SERVER_ADDRESS",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_DATASETS_CACHE",
    "MEGATRON_BRIDGE_HOME",
    "WANDB_API_KEY",
    "COLUMNS",  # text output wraps at 80 columns, as on any non-terminal
)

REPO = Path(__file__).resolve().parent.parent
# Files whose tests wait on real daemons (Slurm, Ray, sshd) the longest, longest first: xdist
# hands them out before the rest, so their waits overlap the CPU-bound files instead of
# trailing at the end (`--dist loadfile` gives whole files in collection order).
# The first five start together (one a worker): at most one of them starts Ray heads
# (raysub_real starts three and launch_ray shares chain_ray's), since heads starting at once on
# two cores miss Ray's own start-up deadlines.
LONGEST_FIRST = (
    "test_chain_timelimit.py",  # waits 60-90 s on slurmctld's clock, using no CPU
    "test_chain_ray.py",
    "test_launch_lost_contact.py",
    "test_chain_slurm.py",
    # The CPU-bound upstream corpus (2-5 s of CPU each) runs while the first files wait.
    "test_upstream_corpus_pin_part1.py",
    "test_upstream_corpus_pin_part2.py",
    "test_upstream_corpus_v0_7_0_part1.py",
    "test_upstream_corpus_v0_7_0_part2.py",
    "test_launch_raysub_real.py",
    "test_pipeline_slurm.py",
    "test_launch_ray.py",
    "test_upstream_judge_job.py",  # the last of the shared Ray head's users: it stops as they end
    "test_launch_slurm.py",
    "test_ray_token_auth.py",  # its own Ray head (token auth), after raysub_real's three
    "test_upstream_corpus_v0_6_0.py",
    "test_diagnose_slurm.py",
    "test_launch_secrets.py",
    "test_launch_slurm_defaults.py",
    "test_pipeline_run.py",
    "test_upstream_corpus_v0_5_0.py",
    "test_upstream_corpus_v0_4_0.py",
)

_saved: dict[str, str | None] = {}
_session_dir: Path | None = None


def sandbox_env(base: Path) -> dict[str, str]:
    """The sandboxed variables, pointing under `base`."""
    return {var: f"{base}{os.sep}{rel}" for var, rel in SANDBOXED.items()}  # ~2,000 calls


def pytest_configure(config) -> None:
    """Before collection: module-level code of test files sees a session sandbox too."""
    global _session_dir
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # started by `&` without job control:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the Ctrl-C tests need it
    _session_dir = Path(tempfile.mkdtemp(prefix="steps-tests-"))
    _bytecode(config)
    for var in (*SANDBOXED, *CONTAINER_ENV, RUNS_DIR, *UNSET, "PYTHONDONTWRITEBYTECODE", "PATH"):
        _saved[var] = os.environ.get(var)
        os.environ.pop(var, None)
    os.environ["PATH"] = _unshimmed(_session_dir / "bin", _saved["PATH"] or os.defpath)
    os.environ.update(sandbox_env(_session_dir))
    os.environ.update(CONTAINER_ENV)
    os.environ[RUNS_DIR] = str(_session_dir / "runs")
    (_session_dir / "home").mkdir()
    # Outside the repo, and kept between runs: its source-constants cache saves each worker ~1 s.
    _hypothesis_home(Path(tempfile.gettempdir()) / f"steps-tests-hypothesis-{os.getuid()}")


def _unshimmed(folder: Path, path: str) -> str:
    """`path` with the interpreter a pyenv `python3` shim starts linked first: the shim runs ~10
    bash processes (~0.1 s of CPU) before that same Python, for each `python3` a test's jobs,
    remote probes and stand-ins start (hundreds in the suite)."""
    found = shutil.which("python3", path=path)
    if found is None or "shims" not in Path(found).parts:
        return path
    try:
        real = subprocess.run(
            [found, "-c", "import sys; print(sys.executable)"],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return path
    if not real or not Path(real).is_file():
        return path
    folder.mkdir()
    (folder / "python3").symlink_to(real)
    return f"{folder}{os.pathsep}{path}"


def _bytecode(config) -> None:
    """Bytecode caches on, and the project compiled once before any worker starts: with
    PYTHONDONTWRITEBYTECODE set (as in some CI images) every xdist worker would rewrite every
    test module again and every `python -m steps` child would compile the same sources."""
    sys.dont_write_bytecode = False
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        for name in ("steps", "runners", "catalog"):
            compileall.compile_dir(REPO / name, quiet=1)
        workers = getattr(config.option, "numprocesses", None)  # xdist's -n, an int by now
        if isinstance(workers, int) and workers > 1:
            _rewrite_once(config)


def _rewrite_once(config) -> None:
    """In a fresh clone (CI), pytest's assertion rewriting of the test modules (~2.7 s of CPU)
    would be done by every xdist worker at once, each finding no cache: two collections here,
    one half of the files each, write that cache first. Skipped when it is there."""
    files = sorted((REPO / "tests").glob("test_*.py"))
    cache = REPO / "tests" / "__pycache__"

    def cached(f: Path) -> bool:
        pycs = cache.glob(f"{f.stem}.*-pytest-*.pyc")
        return any(c.stat().st_mtime >= f.stat().st_mtime for c in pycs)

    cold = [f for f in files if not cached(f)]
    if len(cold) < len(files) // 2:
        return
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts="]
    cmd += ["-p", "no:xdist", "-p", "no:cacheprovider", "-p", "no:hydra_pytest", "-p", "no:anyio"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [
        subprocess.Popen([*cmd, *map(str, half)], cwd=REPO, **quiet)
        for half in (cold[0::2], cold[1::2])
    ]
    for proc in procs:
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()


# What makes a test a `lab` test: it needs a real daemon (Slurm, sshd, a Ray head), through a
# fixture or by starting its own. `pytest -m "not lab"` is the edit loop's fast tier.
LAB_FIXTURES = {"slurm", "sshd", "ray_head", "ray_token_head"}
LAB_FILES = {"test_launch_lost_contact.py", "test_launch_raysub_real.py"}


# Exhaustive tests of seconds each whose behaviour quicker tests also check: `slow`, so the fast
# tier stays fast (CI and the README command run them). File::test, and why each is slow.
SLOW = {
    "test_contracts_schema.py::test_verifiable_prompt_schema_and_fast_validator_agree": "property",
    "test_contracts_schema.py::test_nemo_gym_schema_and_fast_validator_agree": "property",
    "test_validate_hostile.py::test_millions_of_bad_rows_past_max_errors_take_about_the_time_of_"
    "good_rows": "millions of rows, timed",
    "test_contracts_jsonl.py::test_a_100_mb_line_is_skipped_in_bounded_memory_and_later_lines_"
    "still_checked": "writes and reads 100 MB",
    "test_docs.py::test_an_installed_copy_checks_clean_and_docs_refuses_to_write_into_it": (
        "installs a copy"
    ),
    "test_artifacts_registry.py::test_runs_registering_at_once_lose_no_version": "many processes",
    "test_rl_prep_hostile.py::test_a_billion_laughs_blend_is_refused_at_its_anchor_in_bounded_"
    "memory": "bounded-memory stress",
    # end to end through `python -m steps` children (in-process tests cover the same rules)
    "test_ssh_approval.py::test_a_terminal_is_asked_once_and_a_changed_proxycommand_asks_again": (
        "four CLI children on a pseudo-terminal"
    ),
    "test_pipeline_dry_run_stage.py::test_the_shipped_cpu_pipeline_prepares_checks_and_dry_"
    "runs_grpo_from_a_fresh_folder": "a pipeline's children",
    "test_secret_values.py::test_a_pipeline_stages_secret_overrides_reach_no_record_run_dir_or_"
    "output": "a pipeline's children",
    "test_secret_values.py::test_a_literal_list_secret_reaches_nemo_rl_as_a_list_and_no_file_"
    "holds_it": "exec into a stand-in",
    "test_launch_parity.py::test_without_rays_sdk_the_dry_run_and_the_submit_both_refuse": (
        "two CLI children"
    ),
    "test_gpu_smoke.py::test_check_only_makes_the_model_and_runs_the_preflight_of_the_real_"
    "command": "runs the smoke script",
    "test_run_dryrun.py::test_a_literal_secret_reaches_nemo_rl_through_the_environment": (
        "exec into a stand-in"
    ),
    "test_preflight_artifacts.py::test_dpo_row_with_chosen_equal_to_rejected_stops_the_run_"
    "before_exec": "a CLI child",
    "test_nemotron_env_toml.py::test_a_nemotron_env_toml_goes_through_the_rlvr_dry_run_with_no_"
    "edit_but_the_host": "a CLI child",
    "test_ssh_approval.py::test_an_approval_someone_else_can_write_approves_nothing": (
        "a CLI child on a pseudo-terminal"
    ),
    "test_cli_contract.py::test_unreadable_inputs_are_setup_errors_exit_2": (
        "CLI children as an unprivileged user"
    ),
    # a fresh interpreter per case, read for the modules it imported
    "test_launch_jobs_cli.py::test_jobs_and_status_import_no_ray": "fresh interpreters",
    "test_cli_catalog.py::test_list_and_show_import_no_validation_libraries": "fresh interpreters",
    "test_validate_cmd.py::test_validate_of_rows_starts_without_the_type_graph_s_pydantic_models": (
        "a fresh interpreter"
    ),
    "test_rl_prep_hostile.py::test_a_device_or_fifo_as_blend_is_refused_before_it_is_read": (
        "CLI children"
    ),
    "test_rl_prep_hostile.py::test_a_billion_laughs_step_config_is_refused_at_its_anchor_in_"
    "bounded_memory": "a CLI child under a memory limit",
    "test_dcp_checkpoints.py::test_dcp_export_runs_nemo_rls_converter_on_the_latest_step": (
        "a CLI child and its converter"
    ),
    "test_status_watch.py::test_status_follow_prints_unknown_lines_and_exits_2_when_the_cluster_"
    "stays_silent": "a CLI child waiting out its silence bound",
    "test_omegaconf_versions.py::test_every_steps_dry_run_decides_under_a_release_as_under_"
    "nemo_rls": "every step's dry runs in a child, per OmegaConf release",
    "test_artifacts_registry_trust.py::test_a_registry_that_cannot_be_read_is_one_finding_in_"
    "lineage_and_input": "writes the damaged registries, one of 64 MB, for each case",
    "test_artifacts_registry_trust.py::test_a_registering_run_refuses_a_damaged_registry_before_"
    "any_work": "writes the damaged registries, one of 64 MB",
    "test_rl_prep_hostile.py::test_a_device_as_step_config_is_refused_with_its_kind": "a CLI child",
    "test_cli_contract.py::test_ctrl_c_through_code_compiled_from_a_string_exits_130_not_killed_"
    "by_sigint": "a CLI child, interrupted",
    "test_gpu_smoke.py::test_tiny_qwen3_is_a_checkpoint_the_hf_contract_accepts": (
        "builds the model in a child"
    ),
    "test_cli_catalog.py::test_light_commands_import_no_heavy_stack": "a fresh interpreter each",
    "test_omegaconf_versions.py::test_a_staged_job_runs_under_each_supported_release": (
        "a child per OmegaConf release"
    ),
    "test_chain_program.py::test_a_staged_copy_run_by_a_python_without_pydantic_names_what_it_"
    "lacks": "every Python of the machine",
}


# Whole files of end-to-end tests: each test runs `python -m steps` (or several) in a child
# process, about half a second of CPU each, where the in-process tests of the same rules are fast.
SLOW_FILES = {
    "test_output_faults.py": "full disks of 8 MB of rows, mounts, unprivileged CLI children",
    "test_run_launcher.py": "probes real launchers (uv, Pythons) in children",
    "test_record_trust.py": "every job command on planted records, each refused by a real ssh",
    "test_upstream_judge.py": "each judgement is a child process (a stand-in upstream)",
    "test_upstream_setup_judge.py": "each judgement runs the stand-in's setup in a child process",
    "test_config_scale.py": "exhaustive: large inputs, and the cheap bounds fuzzed against difflib",
    "test_artifacts_wandb_settings.py": "each case runs rl_prep twice; W&B's own cases as children",
    "test_pipeline_registry.py": "a pipeline's stages are CLI children",
    "test_readme_recipe.py": "the README's commands, as CLI children",
    "test_judge_in_job.py": "the judge job's program in a child per case",
    "test_cli_startup.py": "a fresh interpreter per case, timed by its imports",
}


def pytest_collection_modifyitems(items) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    unused = set(SLOW)
    for item in items:
        if item.path.name in LAB_FILES or LAB_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.lab)
        name = f"{item.path.name}::{getattr(item, 'originalname', item.name)}"
        if name in SLOW or item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
            unused.discard(name)
    # A name its collected module does not define (a test picked by node id leaves the rest out)
    modules = {item.path.name: getattr(item, "module", None) for item in items}
    stale = sorted(
        n for n in unused if n.split("::")[0] in modules
        and not hasattr(modules[n.split("::")[0]], n.split("::")[1])
    )  # fmt: skip
    if stale:
        raise pytest.UsageError(f"conftest SLOW names tests that do not exist: {stale}")


def pytest_collection_finish(session) -> None:
    """What collection built (the test modules and items, our code and its libraries) lives
    until the end: frozen out of the cyclic GC, whose full passes would walk it again and
    again (and pytest's last one at exit), with young passes every 10,000 allocations, not
    700. One process running the fast tier: 2.8 -> 1.0 s of GC."""
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def _hypothesis_home(path: Path) -> None:
    """Hypothesis keeps its example database and caches in ./.hypothesis (the repo): not here."""
    try:
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:
        return
    set_hypothesis_home_dir(path)


def pytest_sessionfinish(session) -> None:
    """The controller (or the only process, without xdist) stops the session's shared Ray
    head once every worker has finished: no worker knows whether another still needs it."""
    if hasattr(session.config, "workerinput"):
        return
    factory = getattr(session.config, "_tmp_path_factory", None)  # what xdist itself reads
    if factory is not None:
        from cluster_fixtures import stop_shared_ray_head

        stop_shared_ray_head(factory.getbasetemp())


def pytest_unconfigure(config) -> None:
    for var, value in _saved.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    if _session_dir is not None:
        shutil.rmtree(_session_dir, ignore_errors=True)


_NEXT: dict[str, int] = {}


def _counted(factory, prefix: str) -> Path:
    """`factory.mktemp(prefix)`'s folder (`<prefix><n>` in pytest's base temp) without its
    re-pointing a `<prefix>current` link at it: an unlink and a symlink, ~0.7 ms of system
    time, twice for each of ~2,000 tests (its sandbox and its tmp_path)."""
    base, n = factory.getbasetemp(), _NEXT.get(prefix, 0)
    while True:
        path = base / f"{prefix}{n}"
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:  # made by pytest's own mktemp: the next number
            n += 1
            continue
        _NEXT[prefix] = n + 1
        return path


@pytest.fixture
def tmp_path(request, tmp_path_factory) -> Path:
    """pytest's own `tmp_path` (the same name, in the same base temp, kept as pytest keeps
    it by default), made by `_counted`."""
    return _counted(tmp_path_factory, re.sub(r"\W", "_", request.node.name)[:30])


@pytest.fixture(autouse=True)
def sandbox(monkeypatch, tmp_path_factory, tmp_path) -> Path:
    """A fresh sandbox for this test (its path, for tests that look inside)."""
    base = _counted(tmp_path_factory, "sandbox")
    (base / "home").mkdir()
    for var in UNSET:
        monkeypatch.delenv(var, raising=False)
    for var, value in {**sandbox_env(base), **CONTAINER_ENV}.items():
        monkeypatch.setenv(var, value)
    monkeypatch.setenv(RUNS_DIR, str(tmp_path / "runs"))
    return base


@pytest.fixture
def steps_in_process(monkeypatch, capfd):
    """`python -m steps ARGV` as `steps.cli.main` in this process (no interpreter start, ~0.4 s
    of CPU less than a child): `cwd`, and `env` as the whole environment (default: this test's).
    For tests about a record, a finding or an exit code, not about the process boundary. Its
    stdout and stderr are file descriptors 1 and 2, as a child's: what the programs it starts
    print there is in them too."""
    from run_fixtures import steps_cli

    def call(*argv: str, cwd: Path, env: dict[str, str] | None = None):
        whole = dict(os.environ) if env is None else env
        return steps_cli(monkeypatch, capfd, *argv, cwd=cwd, env=whole)

    return call
