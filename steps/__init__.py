"""steps: a step-manifest catalog with a generic runner for RL alignment on NVIDIA NeMo-RL.

This package holds the catalog content (one folder per step) and the CLI. Importing it is
cheap: no torch, ray, vllm, wandb, nemo_rl or megatron, ever.
"""

__version__ = "0.1.0"
