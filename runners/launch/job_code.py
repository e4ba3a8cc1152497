"""Our code staged with a job: a copy of steps/, runners/ and catalog/ in its run dir (`code/`).

Nothing of ours is installed on a user's cluster. A job that runs our code runs this copy, as
nemo-run ships a job's code with it: data prep in the container (`python3 JOB_DIR/code run ...`:
Python runs `code/__main__.py` with `code/` first on sys.path, so the copy wins over anything
installed there and the job's PYTHONPATH is left alone) and a chain's decisions on the
allocation's first node (`python3 -I JOB_DIR/code/runners/chain/segment_program.py`, the
standard library only). What is copied is what the installed package holds (pyproject's
package-data): sources and data files, no caches, no tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

CODE = "code"
PACKAGES = ("steps", "runners", "catalog")
KEEP = (".py", ".toml", ".yaml", ".yml", ".json", ".jsonl", ".md")
SEGMENT_PROGRAM = "runners/chain/segment_program.py"
# What the job's Python must hold (NeMo-RL's image does: vLLM brings msgspec, datasets xxhash).
NEEDS = ("pydantic", "yaml", "omegaconf", "msgspec", "xxhash", "tqdm")
MAIN = f'''"""`python3 JOB_DIR/code ARGS`: steps from the copy staged with this job."""
import importlib.util
import sys

missing = [m for m in {NEEDS!r} if importlib.util.find_spec(m) is None]
if missing:
    print(f"No module named {{missing[0]!r}}: steps staged with this job needs "
          f"{{', '.join(missing)}} in the Python that runs it ({{sys.executable}}, the "
          "container's)", file=sys.stderr)
    sys.exit(2)
from steps.cli import main

sys.exit(main())
'''


def _ignored(folder: str, names: list[str]) -> set[str]:
    """What the copy leaves out: caches, and files the package would not install."""
    base = Path(folder)
    return {
        n for n in names
        if n == "__pycache__" or (not (base / n).is_dir() and not n.endswith(KEEP))
    }  # fmt: skip


def stage(run_dir: Path) -> None:
    """Copy our packages into `run_dir/code` (written aside, then renamed: never half there)."""
    root = Path(__file__).resolve().parents[2]
    partial = run_dir / f".{CODE}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    for package in PACKAGES:
        shutil.copytree(root / package, partial / package, ignore=_ignored)
    (partial / "__main__.py").write_text(MAIN, encoding="utf-8")
    partial.rename(run_dir / CODE)


def steps_command(job_dir: str) -> list[str]:
    """How a job runs `steps` from the staged copy (the first `python3` on the job's PATH)."""
    return ["python3", f"{job_dir}/{CODE}"]


def segment_program(job_dir: str) -> str:
    """The chain's decision program in the staged copy, as the batch host sees the run dir."""
    return f"{job_dir}/{CODE}/{SEGMENT_PROGRAM}"
