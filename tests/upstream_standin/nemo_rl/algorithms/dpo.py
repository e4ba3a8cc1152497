"""Stand-in of upstream's `nemo_rl/algorithms/dpo.py` MasterConfig (see `nemo_rl/__init__.py`)."""

from pydantic import BaseModel
from typing_extensions import TypedDict

from nemo_rl.algorithms.interfaces import CheckpointingConfig, ClusterConfig, PolicyConfig, Section


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
