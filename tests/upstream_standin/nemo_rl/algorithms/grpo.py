"""Stand-in of upstream's `nemo_rl/algorithms/grpo.py` (see `nemo_rl/__init__.py`): its
MasterConfig and the setup names the judge takes from it, imported as upstream imports them."""

from pydantic import BaseModel

from nemo_rl.algorithms.interfaces import CheckpointingConfig, ClusterConfig, PolicyConfig, Section
from nemo_rl.algorithms.loss import ClippedPGLossConfig, ClippedPGLossFn  # noqa: F401
from nemo_rl.utils.checkpoint import CheckpointManager  # noqa: F401
from nemo_rl.utils.logger import Logger  # noqa: F401


class MasterConfig(BaseModel, extra="allow"):
    policy: PolicyConfig
    loss_fn: ClippedPGLossConfig
    data: Section
    grpo: Section
    logger: Section
    cluster: ClusterConfig
    checkpointing: CheckpointingConfig
