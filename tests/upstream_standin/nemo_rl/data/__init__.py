"""Stand-in of upstream's `nemo_rl.data` package (see `nemo_rl/__init__.py`)."""
