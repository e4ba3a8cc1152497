"""Preflight for a NeMo-RL launch on this machine: the interpreter that will run it, from one
cached probe of the launcher (research/real-nemo-rl-gpu-2026-11.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from catalog.errors import Finding
from runners.preflight import PreflightContext, rule

_FIX_LAUNCHER = (
    "pass --launcher with a command that starts NeMo-RL's Python (e.g. "
    '--launcher /path/to/venv/bin/python), or set `launcher` in an `executor = "local"` '
    "profile of env.toml"
)


@rule("local_interpreter")
def local_interpreter(ctx: PreflightContext) -> Iterator[Finding]:
    """E-LAUNCHER: the launcher starts no interpreter; E-PACKAGE-VERSION: its torch,
    transformers, ray (vllm) are missing or outside the checkout's pins."""
    launch = ctx.local_launch
    if launch is None:
        return
    from runners.launch.local import ProbeFailure

    found = launch.probe()
    launcher = launch.launcher
    if isinstance(found, ProbeFailure):
        fix = _FIX_LAUNCHER
        if launcher.is_uv_run:
            fix = (
                "let uv find the Python the checkout's pyproject.toml asks for (`uv python "
                "install`, or UV_PYTHON=/path/to/python), or " + fix
            )
        yield Finding(
            "E-LAUNCHER",
            f"launcher `{launcher.text}` ({launcher.source}) cannot start a Python in "
            f"{launch.checkout}: {found.detail}",
            fix=fix,
        )
        return
    yield from _python_finding(launch.checkout, found, launcher.text)
    if launcher.syncs(launch.env):
        return  # uv installs the checkout's own uv.lock before the script starts
    yield from _package_findings(ctx, found, launcher.text)


def _python_finding(checkout: Any, found: Any, launcher: str) -> Iterator[Finding]:
    """E-LAUNCHER: the launcher starts a Python outside the checkout's `requires-python`."""
    from runners.nemo_rl.pins import python_pin

    pin = python_pin(checkout)
    if pin is None or pin.allows(found.version):
        return
    wanted = pin.text  # as the pyproject writes it
    yield Finding(
        "E-LAUNCHER",
        f"launcher `{launcher}` starts Python {found.version} ({found.executable}); the "
        f'checkout\'s pyproject.toml asks for `requires-python = "{wanted}"`',
        path=str(pin.path),
        line=pin.line,
        fix=_FIX_LAUNCHER.replace("NeMo-RL's Python", f"a Python {wanted}"),
    )


def _package_findings(ctx: PreflightContext, found: Any, launcher: str) -> Iterator[Finding]:
    from runners.nemo_rl.pins import CORE_PACKAGES, VLLM, pins

    vllm = ctx.get("policy.generation.backend") == VLLM
    wanted = [*CORE_PACKAGES, *([VLLM] if vllm else [])]
    needed = pins(ctx.nemo_rl_dir, wanted, [VLLM] if vllm else [], found.markers)
    by = "" if launcher == found.executable else f", launcher `{launcher}`"
    where = f"{found.executable} (Python {found.version}{by})"
    for package in wanted:
        installed = found.packages.get(package)
        for pin in needed.get(package, []):
            if installed is not None and pin.allows(installed):
                continue
            if installed is None:
                msg = f"{package} is not installed in {where}; the checkout needs `{pin.shown}`"
            else:
                msg = f"{package} {installed} in {where} does not satisfy the checkout's "
                msg += f"`{pin.shown}`"
            yield Finding(
                "E-PACKAGE-VERSION",
                msg,
                path=str(pin.path),
                line=pin.line,
                fix=f"install it there (`{found.executable} -m pip install '{pin.shown}'`), or "
                "launch with an interpreter that has it (--launcher 'uv run python' installs "
                "the checkout's uv.lock)",
            )
            break
