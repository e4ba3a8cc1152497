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


READS_POLICY = """\
from typing import Literal, NotRequired, TypedDict


class DTensorConfig(TypedDict):
    enabled: Literal[True]
    tensor_parallel_size: int
    custom_parallel_plan: NotRequired[str | None]
    clear_cache_every_n_steps: NotRequired[int | None]


class DTensorConfigDisabled(TypedDict):
    enabled: Literal[False]


class PolicyConfig(TypedDict):
    model_name: str
    dtensor_cfg: DTensorConfig | DTensorConfigDisabled
    max_grad_norm: NotRequired[float]
"""
READS_LM_POLICY = """\
from nemo_rl.models.policy import PolicyConfig

WORKER = "nemo_rl.models.policy.workers.dtensor_policy_worker.DTensorPolicyWorker"


class Policy:
    def __init__(self, config: PolicyConfig) -> None:
        self.worker = WORKER
"""
READS_WORKER = """\
from nemo_rl.models.policy import PolicyConfig


class DTensorPolicyWorker:
    def __init__(self, config: PolicyConfig) -> None:
        self.cfg = config
        if self.cfg["dtensor_cfg"]["tensor_parallel_size"] > 1:
            self.clip = self.cfg["max_grad_norm"]
        every = self.cfg["dtensor_cfg"].get("clear_cache_every_n_steps")
        self.plan = self.cfg["dtensor_cfg"]["custom_parallel_plan"]
"""
BRANCH_READ = """\

    def train(self, num_experts: int) -> None:
        if num_experts > 1:
            self.log_experts = self.cfg["dtensor_cfg"]["experts_logging"]
"""
READS_CHECKPOINT = """\
from typing import NotRequired, TypedDict


class CheckpointingConfig(TypedDict):
    enabled: bool
    keep_top_k: NotRequired[int]
    model_save_format: NotRequired[str]


class CheckpointManager:
    def __init__(self, config: CheckpointingConfig) -> None:
        self.keep_top_k = config["keep_top_k"]
        self.save_format = config.get("model_save_format", "safetensors")

    def remove_old_checkpoints(self) -> None:
        if self.keep_top_k is None:
            return
"""
READS_DPO = """\
from typing import TypedDict
{base_import}
from nemo_rl.models.policy import PolicyConfig
from nemo_rl.models.policy.lm_policy import Policy
from nemo_rl.utils.checkpoint import CheckpointingConfig, CheckpointManager


class DPOConfig(TypedDict):
    max_num_steps: int


class MasterConfig({base}):
    policy: PolicyConfig
    dpo: DPOConfig
    checkpointing: CheckpointingConfig
"""
READS_EXAMPLE = """\
dpo:
  max_num_steps: 3
checkpointing:
  enabled: true
  keep_top_k: 3
policy:
  model_name: m
  dtensor_cfg:
    enabled: true
    tensor_parallel_size: 1
{plan}"""


def reads_tree(
    root: Path, version: str, example_sets_plan: bool = True, branch_key: str = ""
) -> Path:
    """A DPO-only NeMo-RL whose DTensor worker reads `custom_parallel_plan` unguarded (and
    `max_grad_norm` only under an `if`, `clear_cache_every_n_steps` with `.get`), and whose
    checkpoint manager reads `keep_top_k` unguarded (`model_save_format` with `.get`) and
    handles `keep_top_k: None`; from "0.7.0" on MasterConfig is a pydantic model (validated),
    before a TypedDict. `branch_key` "omitted" or "set" adds a required DTensor key,
    `experts_logging`, that the worker reads only for a model with experts and that the
    example omits or sets."""
    major, minor, patch = version.split(".")
    validated = (int(major), int(minor)) >= (0, 7)
    write(root / "nemo_rl/__init__.py", "raise RuntimeError('NeMo-RL must not be imported')\n")
    write(
        root / "nemo_rl/package_info.py",
        f'MAJOR = {major}\nMINOR = {minor}\nPATCH = {patch}\nPRE_RELEASE = ""\n',
    )
    branch = "    experts_logging: bool\n" if branch_key else ""
    policy = READS_POLICY.replace(
        "    tensor_parallel_size: int\n", f"    tensor_parallel_size: int\n{branch}"
    )
    worker = READS_WORKER + (BRANCH_READ if branch_key else "")
    write(root / "nemo_rl/models/policy/__init__.py", policy)
    write(root / "nemo_rl/models/policy/lm_policy.py", READS_LM_POLICY)
    write(root / "nemo_rl/models/policy/workers/dtensor_policy_worker.py", worker)
    write(root / "nemo_rl/utils/checkpoint.py", READS_CHECKPOINT)
    base = ("from pydantic import BaseModel", 'BaseModel, extra="allow"')
    write(
        root / "nemo_rl/algorithms/dpo.py",
        READS_DPO.format(
            base_import=base[0] if validated else "", base=base[1] if validated else "TypedDict"
        ),
    )
    write(root / "examples/run_dpo.py", "raise SystemExit('never run by the tests')\n")
    plan = "    custom_parallel_plan: null\n" if example_sets_plan else ""
    plan += "    experts_logging: false\n" if branch_key == "set" else ""
    write(root / "examples/configs/dpo.yaml", READS_EXAMPLE.format(plan=plan))
    return root
