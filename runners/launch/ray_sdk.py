"""Ray's Job Submission SDK from here: is it installed (answered without importing Ray, which
takes seconds, so a dry run says E-RAY-MISSING exactly as a submit would), and the client's
address taken from the profile alone (Ray's client would prefer RAY_ADDRESS)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from catalog.errors import StepsError

ADDRESS_VARS = ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")

# What the Job SDK imports: Ray's job_submission, and requests/aiohttp from ray[default].
SDK_MODULES = ("ray", "ray.job_submission", "requests", "aiohttp")


def sdk_missing() -> list[str]:
    """The Job SDK's modules not installed here, found without importing Ray (seconds)."""
    import importlib.util

    missing = [m for m in SDK_MODULES if "." not in m and importlib.util.find_spec(m) is None]
    ray = None if "ray" in missing else importlib.util.find_spec("ray")
    if ray is not None and not any(
        (Path(d) / "job_submission").is_dir() for d in ray.submodule_search_locations or ()
    ):
        missing.append("ray.job_submission")
    return missing


def sdk_error(missing: list[str]) -> StepsError:
    return StepsError(
        "E-RAY-MISSING",
        f"Ray's Job Submission SDK is not installed here (missing: {', '.join(missing)})",
        fix="pip install 'nemo-rl-steps[ray]' (ray[default])",
        exit_code=2,
    )


@contextmanager
def profile_address_only():
    """Hide RAY_ADDRESS/RAY_API_SERVER_ADDRESS while the client resolves its address."""
    saved = {k: os.environ.pop(k) for k in ADDRESS_VARS if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)
