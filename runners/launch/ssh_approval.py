"""Ask once before the first ssh with settings never used from this machine.

A `ProxyCommand` is a program ssh runs here, and a cloned repository's env.toml passes the
ownership checks, so a plain `steps jobs` in it would run it unasked. So a terminal is asked once
per digest of the host and options (y/N); without one, a notice on stderr, or with
`STEPS_SSH_STRICT=1` a refusal (E-SSH-UNAPPROVED, exit 2).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from catalog.errors import StepsError

STRICT_VAR = "STEPS_SSH_STRICT"
RECORD = "ssh-approved.json"
CODE = "E-SSH-UNAPPROVED"
# ssh options that make ssh run a program here or connect through another host
RUNS_HERE = ("proxycommand", "proxyjump", "localcommand", "knownhostscommand")
_settled: set[tuple[Path, str]] = set()  # (record, digest) approved or noticed in this process


def digest(host: str, ssh_options: list[str]) -> str:
    """What an approval is for: the host and every option ssh is given, exactly."""
    return hashlib.sha256(json.dumps([host, list(ssh_options)]).encode()).hexdigest()


def approve(host: str, ssh_options: list[str], env: Mapping[str, str] | None = None) -> None:
    """Return when ssh to `host` with `ssh_options` may start, else E-SSH-UNAPPROVED."""
    env = os.environ if env is None else env
    key, path = digest(host, ssh_options), record_path(env)
    if (path, key) in _settled:
        return
    answer = _read(path).get(key, {}).get("answer")
    if answer == "yes":
        _settled.add((path, key))
        return
    shown = _describe(host, ssh_options, env)
    if _interactive():
        if not _ask(shown):
            raise _refused(shown, "was not approved: nothing was run", env)
        _write(path, key, host, "yes")
    elif env.get(STRICT_VAR, "").strip().lower() in ("1", "yes", "true"):
        raise _refused(shown, "was never approved at a terminal of this machine", env)
    elif answer is None:
        print(
            f"steps: note: first ssh with these settings from this machine ({shown}); no terminal "
            f"to ask, so it goes ahead. {STRICT_VAR}=1 refuses settings never approved at a "
            "terminal (docs/cluster.md, Trust and secrets).",
            file=sys.stderr,
        )
        _write(path, key, host, "noticed")
    _settled.add((path, key))


def record_path(env: Mapping[str, str]) -> Path:
    from catalog.discovery import cache_home

    return cache_home(env, RECORD)


def _interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _ask(shown: str) -> bool:
    sys.stderr.write(
        f"steps: ssh has not been used from this machine with these settings: {shown}.\n"
        "A cloned project's env.toml chooses them (docs/cluster.md, Trust and secrets).\n"
        "Run ssh with them? [y/N] "
    )
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line.strip().lower() in ("y", "yes")


def _describe(host: str, ssh_options: list[str], env: Mapping[str, str]) -> str:
    """`host H`, then each option that runs a program here or goes through another host."""
    from runners.secrets import redact_text, secret_values

    parts = [f"host {host}"]
    for name, value in _options(ssh_options):
        if name.lower() in RUNS_HERE:
            parts.append(f"{name} {value}")
    return redact_text("; ".join(parts), secret_values(env))


def _options(argv: list[str]) -> list[tuple[str, str]]:
    """(name, value) of each `-o Name=value` / `-oName value` / `-J host` in ssh's argv."""
    out = []
    items = iter(argv)
    for item in items:
        if item in ("-o", "-J"):
            value = next(items, "")
        elif item.startswith(("-o", "-J")):
            value = item[2:]
        else:
            continue
        if item.startswith("-J"):
            out.append(("ProxyJump", value))
            continue
        name, sep, rest = value.partition("=")
        if not sep:
            name, _, rest = value.strip().partition(" ")
        out.append((name.strip(), rest.strip()))
    return out


def _refused(shown: str, why: str, env: Mapping[str, str]) -> StepsError:
    return StepsError(
        CODE,
        f"ssh with {shown} {why}",
        fix="read the profile's host and ssh_options (a cloned project's env.toml chooses them),"
        " then run the command again at a terminal and answer y; the answer is kept in "
        f"{record_path(env)}",
        exit_code=2,
    )


def _read(path: Path) -> dict:
    """Approvals kept here; none when the file is unreadable or not this user's alone."""
    from catalog.record_file import read_json_object

    try:
        st = os.stat(path)
    except OSError:
        return {}
    mine = st.st_uid == os.getuid() and not st.st_mode & 0o022
    approved = (read_json_object(path) or {}).get("approved") if mine else None
    if not isinstance(approved, dict):
        return {}
    return {k: v for k, v in approved.items() if isinstance(v, dict)}


def _write(path: Path, key: str, host: str, answer: str) -> None:
    """Keep the answer (mode 0600, replaced whole); a cache that cannot be written asks again."""
    from catalog.atomic_write import open_atomic

    known = {**_read(path), key: {"host": host, "answer": answer, "at": int(time.time())}}
    text = json.dumps({"approved": known}, indent=1, sort_keys=True) + "\n"
    try:
        with open_atomic(path, "w", opener=lambda p, flags: os.open(p, flags, 0o600)) as fh:
            fh.write(text)
    except OSError:
        pass
