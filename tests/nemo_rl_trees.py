"""Small synthetic NeMo-RL source trees in two "versions", and a GRPO step that targets them.

"0.6.0" declares no `val_temperature` and types `grpo.max_val_samples` as int while its example
sets it to null (as v0.6.0 does); "0.7.0" declares `val_temperature` and a `Checkpoint` section.
Their `nemo_rl/__init__.py` raises, so anything that imports NeMo-RL fails the test.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

GEN = """\
from typing import NotRequired, TypedDict


class GenerationConfig(TypedDict):
    backend: str
    temperature: float
"""
NEW_GEN = GEN + "    val_temperature: float\n"
ALGO = """\
from typing import NotRequired, TypedDict

from nemo_rl.models.generation import GenerationConfig


class Checkpoint(TypedDict):
    async_save: bool
    layout: str


class PolicyConfig(TypedDict):
    model_name: str
    generation: GenerationConfig
{extra}

class GRPOConfig(TypedDict):
    num_prompts_per_step: int
    normalize_rewards: bool
    max_val_samples: {max_val}


class MasterConfig(TypedDict):
    policy: PolicyConfig
    grpo: GRPOConfig
"""
EXAMPLE = """\
grpo:
  num_prompts_per_step: 8
  normalize_rewards: true
  max_val_samples: null
policy:
  model_name: m
  generation:
    backend: vllm
    temperature: 1.0
"""

MANIFEST = """\
[step]
id = "rl/toy_grpo"
name = "Toy GRPO"
category = "rl"
description = "A GRPO step over the synthetic NeMo-RL trees."
version = "0.1.0"

[run]
runner = "nemo_rl"
algorithm = "grpo"
script = "examples/run_grpo.py"
default_config = "default"
"""
DEFAULT = """\
policy:
  model_name: Qwen/Qwen3-0.6B
  generation:
    backend: vllm
    temperature: 0.7
grpo:
  num_prompts_per_step: 4
  normalize_rewards: true
  max_val_samples: 16
"""
OVERLAY = """\
policy:
  checkpoint:
    async_save: true
  generation:
    val_temperature: ${.temperature}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def nemo_rl_tree(root: Path, version: str, script: str = "examples/run_grpo.py") -> Path:
    """A NeMo-RL checkout at `version` ("0.6.0"-like before 0.7.0, "0.7.0"-like from it)."""
    major, minor, patch = version.split(".")
    newer = (int(major), int(minor)) >= (0, 7)
    write(root / "nemo_rl/__init__.py", "raise RuntimeError('NeMo-RL must not be imported')\n")
    write(
        root / "nemo_rl/package_info.py",
        f'MAJOR = {major}\nMINOR = {minor}\nPATCH = {patch}\nPRE_RELEASE = ""\n',
    )
    write(root / "nemo_rl/models/generation/__init__.py", NEW_GEN if newer else GEN)
    extra = "    checkpoint: NotRequired[Checkpoint]\n" if newer else ""
    max_val = "int | None" if newer else "int"
    write(root / "nemo_rl/algorithms/grpo.py", ALGO.format(extra=extra, max_val=max_val))
    write(root / script, "raise SystemExit('never run by the tests')\n")
    write(root / "examples/configs/grpo.yaml", EXAMPLE)
    return root


def toy_step(catalog: Path) -> Path:
    """`rl/toy_grpo`: a default config that is valid on both trees, and its version overlay."""
    step = catalog / "rl" / "toy_grpo"
    write(step / "step.toml", MANIFEST)
    write(step / "config" / "default.yaml", DEFAULT)
    write(step / "config" / "overlays" / "default.yaml", OVERLAY)
    return step


def git_commit(root: Path, tag: str | None = None) -> str:
    """Commit everything in `root` (a new repository on first use), optionally tagged."""

    def git(*args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip()

    if not (root / ".git").exists():
        git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "--allow-empty", "-m", "c")
    if tag:
        git("tag", tag)
    return git("rev-parse", "HEAD")
