"""Stand-in of upstream's `nemo_rl.environments` package (see `nemo_rl/__init__.py`)."""
