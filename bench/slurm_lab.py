"""The tests' one-node Slurm (tests/cluster/slurm-local.sh) for the benchmarks: brought up in a
folder on free ports and always taken down, plus a stand-in NeMo-RL checkout and the client
environment `python -m steps` runs with there."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from abort import abort

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]


@contextlib.contextmanager
def slurm_lab(root: Path, **knobs: str) -> Iterator[dict[str, str]]:
    """The lab under root/slurm (one fake GPU; `knobs` are SLURM_LAB_* settings); yields the
    environment its clients need (SLURM_CONF set). Exits with the reason when Slurm is missing."""
    if shutil.which("slurmctld") is None:
        abort("Slurm is not installed: apt-get install slurmctld slurmd slurm-client")
    from cluster_fixtures import lab_down, lab_up

    env = lab_up(root / "slurm", **{"SLURM_LAB_GPUS": "1", **knobs})
    try:
        yield {**env, "SLURM_CONF": str(root / "slurm" / "etc" / "slurm.conf")}
    finally:
        lab_down(env)


def stand_in_nemo_rl(root: Path) -> Path:
    """root/RL: the tests' stand-in ray.sub and recording example scripts."""
    from cluster_fixtures import stand_in_checkout

    return stand_in_checkout(root / "RL")


def steps_env(root: Path, lab: dict[str, str], *drop: str) -> dict[str, str]:
    """What `python -m steps` runs with against the lab: this repo, the lab, outputs under root,
    none of the variables that would point it at the developer's own catalog or checkout."""
    gone = {"STEPS_PATH", "NEMO_RL_HOME", "PYTHONDONTWRITEBYTECODE", *drop}
    env = {k: v for k, v in os.environ.items() if k not in gone}
    env.update(PYTHONPATH=str(REPO), SLURM_CONF=lab["SLURM_CONF"], STEPS_OUTPUT=str(root / "out"))
    return env
