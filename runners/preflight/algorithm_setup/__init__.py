"""What `grpo.setup()`, `dpo.setup()`, the example scripts and the checkpoint manager assert
about the config before (or at) the first step, checked before any GPU starts.

Rules live in `training` (every algorithm) and `grpo` (GRPO only); importing this package
registers them all.
"""

from runners.preflight.algorithm_setup import grpo, training

__all__ = ["grpo", "training"]
