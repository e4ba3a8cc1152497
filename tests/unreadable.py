"""Unreadable files for tests, also as root: chmod 000 and, for root, drop the capabilities that
bypass file permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) from this thread's effective
set for the duration (they stay permitted and are raised again afterwards). Child processes
forked meanwhile inherit the reduced set. Skips the test where neither works.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

_CAPS = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _capabilities():
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = _Header(_VERSION_3, 0), (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    return libc, header, data


@contextlib.contextmanager
def _without_dac_override() -> Iterator[None]:
    libc, header, data = _capabilities()
    saved = data[0].effective
    data[0].effective = saved & ~_CAPS
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    try:
        yield
    finally:
        data[0].effective = saved
        libc.capset(ctypes.byref(header), data)


@contextlib.contextmanager
def unreadable(*paths: Path) -> Iterator[None]:
    """Within the block, `paths` cannot be opened for reading by this process."""
    modes = {p: p.stat().st_mode for p in paths}
    for p in paths:
        p.chmod(0)
    try:
        with contextlib.ExitStack() as stack:
            if os.geteuid() == 0:
                try:
                    stack.enter_context(_without_dac_override())
                except (OSError, AttributeError) as exc:
                    pytest.skip(f"cannot drop CAP_DAC_OVERRIDE as root here: {exc}")
            for p in paths:
                try:
                    os.close(os.open(p, os.O_RDONLY))
                except OSError:
                    continue
                pytest.skip(f"{p} stays readable (permissions are not enforced here)")
            yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
