"""Stand-in of the config TypedDicts upstream's MasterConfigs share (see `nemo_rl/__init__.py`).

Upstream declares them with `typing.TypedDict` on Python 3.13; pydantic needs
`typing_extensions.TypedDict` below 3.12, where these tests may run. Fields are the ones the
tests use, typed as upstream v0.7.0 types them; the rest is allowed, as pydantic does there.
"""

from typing import Any, Literal

from typing_extensions import NotRequired, TypedDict


class TokenizerConfig(TypedDict):
    name: str
    chat_template: NotRequired[str | None]


class DTensorConfigDisabled(TypedDict):
    enabled: Literal[False]


class DTensorConfig(TypedDict):
    enabled: Literal[True]
    tensor_parallel_size: int
    context_parallel_size: int


class PolicyConfig(TypedDict):
    model_name: str
    tokenizer: TokenizerConfig
    train_global_batch_size: int
    train_micro_batch_size: int
    dtensor_cfg: NotRequired[DTensorConfigDisabled | DTensorConfig]
    max_total_sequence_length: int


class ClusterConfig(TypedDict):
    gpus_per_node: int
    num_nodes: int


class CheckpointingConfig(TypedDict):
    enabled: bool
    checkpoint_dir: str
    save_period: int


Section = dict[str, Any]
