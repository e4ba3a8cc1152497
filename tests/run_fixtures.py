"""Builders shared by the run tests: a fake NeMo-RL checkout, a step folder, the CLI runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
RECORD_VAR = "FAKE_NEMO_RL_RECORD"
SCRIPTS = (
    "examples/run_grpo.py",
    "examples/run_dpo.py",
    "examples/nemo_gym/run_grpo_nemo_gym.py",
)

# What an upstream script does with its argv, minus the training: parse --config, load the
# YAML it names, and write down what it was given and where it ran.
RECORDER = textwrap.dedent(
    """\
    import argparse, json, os, sys
    import yaml
    parser = argparse.ArgumentParser()
    parser.add_argument("--config")
    args, overrides = parser.parse_known_args()
    text = open(args.config, encoding="utf-8").read()
    record = {
        "script": __file__,
        "argv": sys.argv,
        "orig_argv": getattr(sys, "orig_argv", None),
        "cwd": os.getcwd(),
        "env_names": sorted(os.environ),
        "pythonpath": os.environ.get("PYTHONPATH", ""),
        "config_arg": args.config,
        "config_text": text,
        "config": yaml.safe_load(text),
        "overrides": overrides,
    }
    with open(os.environ["FAKE_NEMO_RL_RECORD"], "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    """
)


def fake_checkout(root: Path, uv_lock: bool = False) -> Path:
    """A NeMo-RL checkout whose example scripts only record how they were started."""
    for rel in SCRIPTS:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(RECORDER, encoding="utf-8")
    prompt = root / "examples" / "prompts" / "cot.txt"  # rlvr's prompt_file, in every release
    prompt.parent.mkdir(parents=True, exist_ok=True)
    prompt.write_text("Think step by step.\n{}\n", encoding="utf-8")
    if uv_lock:
        (root / "uv.lock").write_text("version = 1\n", encoding="utf-8")
    return root


def fake_uv(bin_dir: Path, record: Path) -> Path:
    """A `uv` on PATH that records its argv, then runs `uv run python ...` with this Python."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    uv = bin_dir / "uv"
    uv.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"json.dump({{'argv': sys.argv, 'cwd': os.getcwd()}}, open({str(record)!r}, 'w'))\n"
        "assert sys.argv[1:3] == ['run', 'python'], sys.argv\n"
        "os.execv(sys.executable, [sys.executable, *sys.argv[3:]])\n",
        encoding="utf-8",
    )
    uv.chmod(0o755)
    return uv


DPO_MANIFEST = """\
[step]
id = "rl/fake_dpo"
name = "Fake DPO"
category = "rl"
description = "A DPO step for runner tests."
version = "1.2.3"

[run]
runner = "nemo_rl"
algorithm = "dpo"
script = "examples/run_dpo.py"
default_config = "tiny"

[[consumes]]
name = "train"
type = "preference_jsonl"
description = "pairs"
config_keys = ["data.train.data_path"]

[[consumes]]
name = "validation"
type = "preference_jsonl"
description = "held-out pairs"
required = false
config_keys = ["data.validation.data_path"]

[[consumes]]
name = "policy"
type = "hf_checkpoint"
description = "policy"
config_keys = ["policy.model_name"]

[[produces]]
name = "checkpoint"
type = "nemo_rl_checkpoint"
description = "checkpoints"
config_keys = ["checkpointing.checkpoint_dir"]
"""

# The shipped DPO tiny config underneath, so NeMo-RL's schema rules see a complete config.
DPO_BASE = f"""\
defaults: {REPO}/steps/rl/nemo_rl/dpo/config/tiny.yaml
policy:
  model_name: Qwen/Qwen3-0.6B
  tokenizer:
    name: ${{policy.model_name}}
  train_global_batch_size: 8
dpo:
  max_num_steps: 10
  val_global_batch_size: ${{mul:${{policy.train_global_batch_size}},2}}
data:
  train:
    data_path: ???
  validation:
    data_path: ???
checkpointing:
  checkpoint_dir: results/fake_dpo
"""

DPO_TINY = """\
defaults: base.yaml
dpo:
  max_num_steps: 3
data:
  train:
    data_path: {data}/train.jsonl
  validation:
    data_path: {data}/val.jsonl
"""  # absolute: NeMo-RL opens relative paths from its checkout root, not from this folder

PAIR = {"prompt": "2+2?", "chosen": "4", "rejected": "5"}


def dpo_step(catalog: Path) -> Path:
    """`rl/fake_dpo` under a catalog root: manifest, base + tiny config, two data files."""
    step = catalog / "rl" / "fake_dpo"
    (step / "config").mkdir(parents=True)
    (step / "data").mkdir()
    (step / "step.toml").write_text(DPO_MANIFEST, encoding="utf-8")
    (step / "config" / "base.yaml").write_text(DPO_BASE, encoding="utf-8")
    (step / "config" / "tiny.yaml").write_text(
        DPO_TINY.format(data=step / "data"), encoding="utf-8"
    )
    for name, rows in (("train", 8), ("val", 1)):  # train: one global batch (E-ZERO-STEPS)
        (step / "data" / f"{name}.jsonl").write_text((json.dumps(PAIR) + "\n") * rows,
                                                      encoding="utf-8")  # fmt: skip
    return step


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The test process's environment without anything that points the runner elsewhere."""
    drop = {"NEMO_RL_HOME", "STEPS_PATH", "STEPS_RUNS_DIR", RECORD_VAR}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["STEPS_CACHE_DIR"] = str(tmp_path / "cache")
    env.update(extra)
    return env


def steps_run(*argv: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`python -m steps run ...` in a subprocess, as a user types it."""
    return steps_child("run", *argv, cwd=cwd, env=env)


def steps_child(*argv: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`python -m steps ...` in a subprocess, as a user types it."""
    env = dict(env)
    env["PYTHONPATH"] = str(REPO) + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    return subprocess.run(
        [sys.executable, "-m", "steps", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def only_run_dir(runs: Path, step_id: str) -> Path:
    dirs = [p for p in (runs / step_id).iterdir() if not p.name.startswith(".")]
    assert len(dirs) == 1, dirs
    return dirs[0]


class CliResult:
    """What an in-process `python -m steps ...` call returned and printed."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


class ExecInProcess(BaseException):
    """An in-process CLI call reached os.exec*: it would have replaced the test process. Not an
    Exception, so `main` cannot turn it into a finding: the test fails, naming the program."""


def _no_exec(*args: object) -> None:
    raise ExecInProcess(f"the CLI under test called os.exec* {args[:2]!r}: run it as a child")


def steps_cli(monkeypatch, capsys, *argv: str, cwd: Path, env: dict[str, str]) -> CliResult:
    """`steps.cli.main(argv)` in this process, with `env` as the whole environment and `cwd`.
    A hand-over by exec (a local `--run`) fails the test instead of replacing pytest: such a
    test runs `python -m steps` as a child (`steps_run`). `capsys` (or `capfd`, for what the
    programs it starts print too) captures its output."""
    from steps.cli import main

    for name in ("execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe"):
        monkeypatch.setattr(os, name, _no_exec)
    monkeypatch.chdir(cwd)
    for name in list(os.environ):
        if name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return CliResult(code, out.out, out.err)


class FdCapture:
    """What this process writes on file descriptors 1 and 2, and through sys.stdout/stderr,
    while the block runs: `capfd` for a module-scoped fixture or a helper with no test's
    fixtures at hand (`steps_here`). `readouterr()` returns and forgets what was written."""

    def __enter__(self) -> FdCapture:
        self._saved: list[tuple[int, str, int, object, object]] = []
        for fd, name in ((1, "stdout"), (2, "stderr")):
            stream = getattr(sys, name)
            stream.flush()
            tmp = tempfile.TemporaryFile(buffering=0)
            self._saved.append((fd, name, os.dup(fd), stream, tmp))
            os.dup2(tmp.fileno(), fd)  # dup'd: the file offset is shared with `tmp`
            setattr(sys, name, open(fd, "w", encoding="utf-8", errors="replace",
                                    closefd=False, buffering=1))  # fmt: skip
        return self

    def readouterr(self) -> SimpleNamespace:
        got = []
        for _fd, name, _dup, _stream, tmp in self._saved:
            getattr(sys, name).flush()
            tmp.seek(0)  # type: ignore[attr-defined]
            got.append(tmp.read().decode(errors="replace"))  # type: ignore[attr-defined]
            tmp.seek(0)  # type: ignore[attr-defined]
            tmp.truncate()  # type: ignore[attr-defined]
        return SimpleNamespace(out=got[0], err=got[1])

    def __exit__(self, *exc: object) -> None:
        for fd, name, dup, stream, tmp in reversed(self._saved):
            getattr(sys, name).close()  # flushes; closefd=False leaves fd open
            os.dup2(dup, fd)
            os.close(dup)
            setattr(sys, name, stream)
            tmp.close()  # type: ignore[attr-defined]


def steps_here(*argv: str, cwd: Path, env: dict[str, str]) -> CliResult:
    """`python -m steps ARGV` as `steps.cli.main` in this process, as `steps_in_process` does,
    for callers without a test's fixtures (a module-scoped fixture, a helper object): the
    environment, cwd and os.exec* guard are undone and the output captured around the call."""
    import pytest

    with pytest.MonkeyPatch.context() as mp, FdCapture() as cap:
        return steps_cli(mp, cap, *argv, cwd=cwd, env=env)


def dry_run(
    monkeypatch, capsys, tmp_path: Path, step: str, config_text: str, env: dict | None = None
) -> dict:
    """`run STEP -c <config_text written to tmp_path> --dry-run --json` against a fake NeMo-RL
    checkout, in-process; the JSON document it printed."""
    checkout = fake_checkout(tmp_path / "nemo-rl")
    config = tmp_path / "cfg.yaml"
    config.write_text(config_text, encoding="utf-8")
    argv = ["run", step, "-c", str(config), "--nemo-rl", str(checkout), "--dry-run", "--json"]
    argv += ["--runs-dir", str(tmp_path / "runs")]
    run_env = env if env is not None else clean_env(tmp_path)
    return json.loads(steps_cli(monkeypatch, capsys, *argv, cwd=tmp_path, env=run_env).stdout)
