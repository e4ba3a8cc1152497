"""Stand-in of upstream's `nemo_rl.algorithms` package (see `nemo_rl/__init__.py`)."""
