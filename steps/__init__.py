"""steps: the catalog content (one folder per step) and the CLI; importing it is cheap (no torch,
ray, vllm, wandb, nemo_rl or megatron, ever)."""

__version__ = "0.1.0"
