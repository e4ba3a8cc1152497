"""Imported once by the forkserver that rl_prep's workers are forked from (build._Workers):
the worker code and every output type's row check are ready before the first fork, so a worker
starts warm instead of loading them per run (a tiny input then costs milliseconds, not 0.1 s)."""

import xxhash  # noqa: F401 - the shard digests' fast hash

from catalog.file_digest import file_digests
from runners.rl_prep.chunks import process_chunk, warm_checks

warm_checks()

__all__ = ["file_digests", "process_chunk"]
