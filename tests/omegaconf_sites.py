"""Folders holding one OmegaConf release each, put first on PYTHONPATH to run our code (or a
"container" Python) under that release beside everything else the test venv has.

Made offline from wheels in LAB_WHEELS (`.ci/run` downloads them there; no test downloads
anything) with `pip install --no-index --no-deps --target`, once per machine: like the other lab
assets they are kept between runs, in LAB_SITES. `python tests/omegaconf_sites.py 2.4.0` prints
a release's folder (made if missing), for .ci/run's second run of the config tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

# The releases a staged job may meet: the oldest and newest we support, and NeMo-RL's line.
RELEASES = ("2.2.3", "2.3.0", "2.4.0")
_TMP = Path(tempfile.gettempdir())
LAB_WHEELS = Path(os.environ.get("STEPS_LAB_WHEELS") or _TMP / f"steps-lab-wheels-{os.getuid()}")
LAB_SITES = _TMP / f"steps-lab-omegaconf-{os.getuid()}"
FETCH = "; ".join(  # one release a command: pip resolves one version per package
    f"python -m pip download --no-deps -d {LAB_WHEELS} omegaconf=={r}" for r in RELEASES
)


def site(release: str) -> Path | None:
    """The folder holding OmegaConf `release` (made now from its wheel if missing); None when
    the wheel is not in LAB_WHEELS."""
    final = LAB_SITES / release
    if (final / "omegaconf" / "version.py").is_file():
        return final
    wheel = LAB_WHEELS / f"omegaconf-{release}-py3-none-any.whl"
    if not wheel.is_file():
        return None
    LAB_SITES.mkdir(parents=True, exist_ok=True)
    aside = LAB_SITES / f".{release}.{os.getpid()}"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
         "--disable-pip-version-check", "--target", str(aside), str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        aside.rename(final)
    except OSError:  # another worker put it there first
        subprocess.run(["rm", "-rf", str(aside)], check=False)
    return final


if __name__ == "__main__":
    found = site(sys.argv[1])
    if found is None:
        sys.exit(f"no wheel of omegaconf {sys.argv[1]} in {LAB_WHEELS}: {FETCH}")
    print(found)
