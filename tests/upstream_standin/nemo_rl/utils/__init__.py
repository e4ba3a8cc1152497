"""Stand-in of upstream's `nemo_rl.utils` package (see `nemo_rl/__init__.py`)."""
