"""Imported once by the forkserver rl_prep's workers fork from (build._Workers), so a worker starts
with the code and row checks loaded (a tiny input costs milliseconds, not 0.1 s)."""

import xxhash  # noqa: F401 - the shard digests' fast hash

from catalog.file_digest import file_digests
from runners.rl_prep.chunks import process_chunk, warm_checks

warm_checks()

__all__ = ["file_digests", "process_chunk"]
