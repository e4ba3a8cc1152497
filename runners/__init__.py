"""What runs: the config compiler, preflight, the exec into NeMo-RL, data prep, pipelines.

Runners may import `catalog`; `catalog` never imports runners.
"""
