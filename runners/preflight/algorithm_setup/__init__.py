"""What `grpo.setup()`, `dpo.setup()`, the example scripts and the checkpoint manager assert
before (or at) the first step: `training` (every algorithm) and `grpo`; importing registers both.
"""

from runners.preflight.algorithm_setup import grpo, training

__all__ = ["grpo", "training"]
