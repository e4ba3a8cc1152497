"""Stand-in of upstream's `nemo_rl/algorithms/dpo.py` MasterConfig and the setup names it imports
(see `nemo_rl/__init__.py`); DPOSaveState a dataclass built from training_info (dpo.py:185)."""

from dataclasses import dataclass

from pydantic import BaseModel
from typing_extensions import TypedDict

from nemo_rl.algorithms.interfaces import CheckpointingConfig, ClusterConfig, PolicyConfig, Section
from nemo_rl.algorithms.loss import DPOLossFn  # noqa: F401
from nemo_rl.utils.checkpoint import CheckpointManager  # noqa: F401
from nemo_rl.utils.logger import Logger  # noqa: F401


class DPOConfig(TypedDict, total=False):
    max_num_steps: int
    val_period: int
    sft_loss_weight: float


class MasterConfig(BaseModel, extra="allow"):
    policy: PolicyConfig
    data: Section
    dpo: DPOConfig
    logger: Section
    cluster: ClusterConfig
    checkpointing: CheckpointingConfig


@dataclass
class DPOSaveState:
    epoch: int
    step: int
    total_steps: int
    consumed_samples: int
    total_valid_tokens: int
