"""A stand-in of upstream NeMo-RL's interface (as tests/run_fixtures.py's run_*.py stand in for
its example scripts): the module paths and the behaviour steps' upstream judge relies on, small
enough to read, for tests that cannot install NeMo-RL (several GB, Python 3.13).

Like upstream v0.7.0: `nemo_rl.algorithms.{dpo,grpo}.MasterConfig` is a pydantic model over
TypedDicts; `nemo_rl.algorithms.utils.get_tokenizer` loads a tokenizer folder. Test hooks, not
upstream's: STANDIN_COUNTER names a file that gets one line per import (a judge run),
STANDIN_HANG names a file that gets this process's pid before it sleeps (an import that hangs),
STANDIN_GREEDY maps that many GiB (an import that wants more memory than it may have).
"""

import os
import time

__version__ = "0.7.0"

if os.environ.get("STANDIN_COUNTER"):
    with open(os.environ["STANDIN_COUNTER"], "a", encoding="utf-8") as fh:
        fh.write("imported\n")
if os.environ.get("STANDIN_HANG"):
    with open(os.environ["STANDIN_HANG"], "w", encoding="utf-8") as fh:
        fh.write(str(os.getpid()))
    time.sleep(3600)
if os.environ.get("STANDIN_GREEDY"):
    held = bytearray(int(os.environ["STANDIN_GREEDY"]) << 30)  # untouched pages: address space
