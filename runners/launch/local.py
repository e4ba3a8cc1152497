"""A NeMo-RL step started on this machine: which launcher starts its script, and can it.

The launcher is `--launcher`, else the `local` profile's, else `uv run python` with uv.lock and
uv (NeMo-RL's workers build their venvs from it), else this Python. One probe, `<launcher> -c
<probe>` in the checkout (uv with `UV_NO_SYNC=1`: nothing installed), proves it starts an
interpreter and reads the pinned packages' versions (`importlib.metadata`, nothing imported) and
whether `nemo_rl` is found. It is cached per launcher, checkout and the state of the files that
decide the answer (uv.lock, pyproject.toml, the program, site-packages folders).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from catalog.atomic_write import write_atomic
from catalog.record_file import read_json_object

PROBE_TIMEOUT_S = 60
PROBE_MARK = "STEPS-INTERPRETER "
PROBED_PACKAGES = ("torch", "transformers", "ray", "vllm")
CACHE_FORMAT = 2
_KEY_VARS = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")  # decide which Python starts
# One line per fact, for any Python >= 3.8; importlib.metadata reads dist-info, imports nothing.
_FACTS = """\
import importlib.util, json, os, platform, sys
from importlib import metadata
def version(name):
    try:
        return metadata.version(name)
    except Exception:
        return None
def facts(names):
    impl = sys.implementation
    markers = {
        "implementation_name": impl.name,
        "implementation_version": "%d.%d.%d" % tuple(impl.version[:3]),
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "python_full_version": platform.python_version(),
        "python_version": "%d.%d" % sys.version_info[:2],
        "sys_platform": sys.platform,
    }
    sites = [p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))]
    return {
        "version": platform.python_version(),
        "executable": sys.executable,
        "packages": {name: version(name) for name in names},
        "markers": markers,
        "sites": [p for p in sites if os.path.isdir(p)],
        "nemo_rl": importlib.util.find_spec("nemo_rl") is not None,
    }
"""
_PROBE = _FACTS + "print(MARK + json.dumps(facts(NAMES)))\n"


@dataclass(frozen=True)
class Launcher:
    """The command that starts NeMo-RL's script here, and who chose it (for messages)."""

    argv: tuple[str, ...]
    source: str

    @property
    def text(self) -> str:
        return shlex.join(self.argv)

    @property
    def is_uv_run(self) -> bool:
        return Path(self.argv[0]).name == "uv" and self.argv[1:2] == ("run",)

    def syncs(self, env: Mapping[str, str]) -> bool:
        """`uv run` installs the checkout's lock before it starts the script (unless told not)."""
        return self.is_uv_run and "--no-sync" not in self.argv and not env.get("UV_NO_SYNC")

    def command(self, script: str, config_path: str) -> list[str]:
        return [*self.argv, script, "--config", config_path]


def choose_launcher(
    checkout: Path, explicit: str | None, env: Mapping[str, str], source: str = "--launcher"
) -> Launcher:
    """`explicit` (from `source`), else `uv run python` with uv.lock and uv, else this Python."""
    if explicit and explicit.strip():
        return Launcher(tuple(shlex.split(explicit)), source)
    if (checkout / "uv.lock").is_file() and shutil.which("uv", path=env.get("PATH", os.defpath)):
        return Launcher(("uv", "run", "python"), "the checkout has uv.lock and uv is on PATH")
    return Launcher((sys.executable,), "the Python running steps")


@dataclass(frozen=True)
class Interpreter:
    """What the probe saw in the interpreter the launcher starts."""

    version: str
    executable: str
    packages: dict[str, str | None]
    markers: dict[str, str] = field(default_factory=dict)
    sites: list[str] = field(default_factory=list)
    nemo_rl: bool = True  # `find_spec("nemo_rl")` in the checkout; True where not asked


@dataclass(frozen=True)
class ProbeFailure:
    """The launcher did not start an interpreter: the first lines it printed, for the user."""

    detail: str


@dataclass(frozen=True)
class LocalLaunch:
    """A NeMo-RL script about to start here: the launcher, the checkout it runs in, its env."""

    launcher: Launcher
    checkout: Path
    env: Mapping[str, str] = field(repr=False, compare=False)

    def command(self, script: str, config_path: str) -> list[str]:
        return self.launcher.command(script, config_path)

    def probe(self) -> Interpreter | ProbeFailure:
        return probe(self.launcher, self.checkout, self.env)


def _stat(path: str | Path | None) -> list[int] | None:
    try:
        st = os.stat(path) if path else None
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino] if st else None


def _key(launcher: Launcher, checkout: Path, env: Mapping[str, str]) -> str:
    program = shutil.which(launcher.argv[0], path=env.get("PATH", os.defpath))
    seen = {k: v for k, v in env.items() if k in _KEY_VARS}
    parts = [
        CACHE_FORMAT,
        list(launcher.argv),
        str(checkout.resolve()),
        _stat(checkout / "uv.lock"),
        _stat(checkout / "pyproject.toml"),
        _stat(checkout / "nemo_rl"),  # a checkout's own package, found from its folder
        program,
        _stat(program),
        sorted(seen.items()),
        sorted((k, v) for k, v in env.items() if k.startswith("UV_")),
    ]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def cache_dir(env: Mapping[str, str]) -> Path:
    """`$STEPS_CACHE_DIR` (else `$XDG_CACHE_HOME`, else ~/.cache) `/nemo-rl-steps/interpreter`."""
    from catalog.discovery import cache_home

    return cache_home(env, "interpreter")


def _fresh(entry: dict) -> Interpreter | None:
    """A cache entry's facts while no site-packages folder changed since."""
    try:
        facts = Interpreter(**entry["facts"])
        sites = entry.get("site_stats", {})
    except (TypeError, KeyError):
        return None
    if any(_stat(site) != stat for site, stat in sites.items()):
        return None
    return facts


_MEMO: dict[str, dict] = {}


def probe(
    launcher: Launcher, checkout: Path, env: Mapping[str, str], timeout: float = PROBE_TIMEOUT_S
) -> Interpreter | ProbeFailure:
    """What `launcher` starts in `checkout` with `env` (cached), or why it started nothing."""
    key = _key(launcher, checkout, env)
    path = cache_dir(env) / f"{key}.json"
    for entry in (_MEMO.get(key), read_json_object(path)):
        if entry and (facts := _fresh(entry)) is not None:
            _MEMO[key] = entry
            return facts
    found = _this_interpreter(launcher, checkout, env) or _run_probe(
        launcher, checkout, env, timeout
    )
    if isinstance(found, Interpreter):
        entry = {"facts": asdict(found), "site_stats": {s: _stat(s) for s in found.sites}}
        _MEMO[key] = entry
        with contextlib.suppress(OSError):  # a read-only cache only costs a probe next time
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(entry, indent=1) + "\n")
    return found


# What decides a Python's import path besides its executable (PATH and VIRTUAL_ENV do not,
# for an absolute interpreter: its pyvenv.cfg does).
_PATH_VARS = (
    "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONSAFEPATH",
    "PYTHONPLATLIBDIR",
)  # fmt: skip


def _started_with() -> dict[str, str] | None:
    """The environment this process started with (/proc/self/environ: sys.path was made from
    it, os.environ may have changed since), else None."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def _this_interpreter(
    launcher: Launcher, checkout: Path, env: Mapping[str, str]
) -> Interpreter | None:
    """The probe's facts read in this process, without a child, when the launcher is this
    interpreter and the import path is the one it started with (`_PATH_VARS`) but for the
    checkout in front of PYTHONPATH; a checkout holding distribution metadata gets a child."""
    flags = sys.flags
    started = _started_with()
    if started is None or launcher.argv != (sys.executable,) or flags.isolated or flags.no_site:
        return None
    ours = started.get("PYTHONPATH")
    fronted = str(checkout) + (os.pathsep + ours if ours else "")
    same = all(env.get(k) == started.get(k) for k in _PATH_VARS if k != "PYTHONPATH")
    if flags.ignore_environment or not same or env.get("PYTHONPATH") not in (ours, fronted):
        return None
    if any(checkout.glob("*.dist-info")) or any(checkout.glob("*.egg-info")):
        return None
    from importlib.machinery import PathFinder
    from importlib.util import find_spec

    facts = _own_facts()
    found = PathFinder.find_spec("nemo_rl", [str(checkout)]) is not None
    facts["nemo_rl"] = find_spec("nemo_rl") is not None or found
    return Interpreter(**facts)


_OWN: list[tuple[tuple, dict]] = []  # at most one entry: (sys.path and its folders' stats, facts)


def _own_facts() -> dict:
    """The probe's facts of this process, a fresh copy: read again only when `sys.path` or one
    of its folders changed."""
    key = (tuple(sys.path), tuple(map(str, map(_stat, sys.path))))
    if not _OWN or _OWN[0][0] != key:
        space: dict = {}
        exec(compile(_FACTS, "<steps interpreter probe>", "exec"), space)
        _OWN[:] = [(key, space["facts"](PROBED_PACKAGES))]
    return copy.deepcopy(_OWN[0][1])


def _run_probe(
    launcher: Launcher, checkout: Path, env: Mapping[str, str], timeout: float
) -> Interpreter | ProbeFailure:
    script = _PROBE.replace("MARK", repr(PROBE_MARK)).replace("NAMES", repr(PROBED_PACKAGES))
    run_env = {**env, "UV_NO_SYNC": "1"} if launcher.is_uv_run else dict(env)
    try:
        proc = subprocess.run(
            [*launcher.argv, "-c", script],
            cwd=checkout,
            env=run_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return ProbeFailure(f"`{launcher.argv[0]}` is not installed or not on PATH")
    except PermissionError:
        return ProbeFailure(f"`{launcher.argv[0]}` is not executable")
    except subprocess.TimeoutExpired:
        return ProbeFailure(f"no answer within {timeout:.0f} s")
    for line in proc.stdout.splitlines():
        if line.startswith(PROBE_MARK) and proc.returncode == 0:
            try:
                return Interpreter(**json.loads(line[len(PROBE_MARK) :]))
            except (ValueError, TypeError):
                break
    said = [t.strip() for t in (proc.stderr + "\n" + proc.stdout).splitlines() if t.strip()]
    detail = " ... ".join(said[:1] + said[-1:] if len(said) > 1 else said) or "it printed nothing"
    return ProbeFailure(f"exit {proc.returncode}: {detail}")
