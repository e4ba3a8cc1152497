"""One pipeline stage: its cache key material, its record's pieces, its child process (secrets only
in its environment, its output redacted, its own process group so an interrupt is forwarded
once)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from catalog.errors import StepsError
from runners.kinds import kind_for
from runners.pipeline.lineage import cache_key, fingerprint
from runners.secrets import is_secret_env, redact_text

ENV_REF = re.compile(r"\$\{oc\.env:\s*([A-Za-z_][A-Za-z0-9_]*)")

GRACE_S = 10.0  # how long an interrupted child may take to stop before it is killed


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) or SIGTERM reached the pipeline; `signum` is forwarded to the child."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stamps(paths: list[str]) -> dict[str, list[int]] | None:
    try:
        return {p: [(st := os.stat(p)).st_mtime_ns, st.st_size] for p in paths}
    except OSError:
        return None


def stage_key(
    stage: Any, overrides: list[str], inputs: dict, target: Any
) -> tuple[str, str, dict, list[str]]:
    """(cache key, config hash, config sources, config env names) of a stage with these `inputs`,
    compiled for `target` (None for other runners). The child pins the config's plain
    `${oc.env:VAR}` to this environment's values, so those values are part of the key."""
    chash, sources, env_names = config_hash(stage, overrides, target)
    key = cache_key(
        stage.step,
        stage.version,
        chash,
        {p: i["fingerprint"] for p, i in inputs.items()},
        {p: b.value for p, b in stage.outputs.items()},
        nemo_rl_label(target),
        {name: os.environ.get(name) for name in env_names},
    )
    return key, chash, sources, env_names


def nemo_rl_label(target: Any) -> str | None:
    """The NeMo-RL version a stage is compiled for, as recorded and keyed (None: unknown)."""
    version = getattr(target, "version", None)
    return version.label if version is not None else None


def config_hash(
    stage: Any, overrides: list[str], target: Any = None
) -> tuple[str, dict, list[str]]:
    """sha256 of the compiled config (interpolations kept), the files it came from, and the
    non-secret variables its `${oc.env:...}` read.

    A NeMo-RL stage is compiled as `run` compiles it for `target`, whose version decides its
    overlay keys. `overrides` have secrets replaced by references, so no secret is hashed."""
    if target is not None:
        from runners.config.overlays import overlay_files
        from runners.nemo_rl import checkout as nemo_rl

        compiled = nemo_rl.compile_for(
            target, _algorithm(stage), stage.config, overrides, stage.step_dir / "config"
        )
        sources = [*compiled.sources, *overlay_files(compiled.sources)]  # unused ones too
    else:
        from runners.config.compiler import compile_config

        compiled = compile_config(stage.config, overrides, stage.step_dir / "config")
        sources = list(compiled.sources)
    text = compiled.to_yaml()
    env_names = sorted({name for name in ENV_REF.findall(text) if not is_secret_env(name)})
    stamps = _stamps(list(dict.fromkeys(str(p) for p in sources))) or {}
    return hashlib.sha256(text.encode()).hexdigest(), stamps, env_names


def nemo_rl_target(explicit: str | None, env: dict) -> Callable[[], Any]:
    """The NeMo-RL the stages run on (`--nemo-rl`, else where `run` finds it), located once and
    only when a NeMo-RL stage asks."""

    @functools.cache
    def target() -> Any:
        from runners.nemo_rl import checkout

        return checkout.resolve_target(explicit, env)

    return target


def stage_reader(nemo_rl_hint: str | None, env: dict) -> Callable[..., Any]:
    """The planner's `read_config` for a pipeline run: a stage's config compiled as its `run`
    compiles it (for the NeMo-RL it runs on, located once and only when needed), so the plan,
    the cache key and the stage's checks share one compile (`compile_once`); the plain compile
    where no NeMo-RL is usable here."""
    from runners.config.values import CompiledValues, read_config

    target = nemo_rl_target(nemo_rl_hint, env)

    def read(path: Path, overrides: list[str], entry: Any = None) -> Any:
        run = entry.data.get("run") if entry is not None else None
        run = run if isinstance(run, dict) else {}
        try:
            nemo_rl = kind_for(str(run.get("runner", ""))).compiles_with_nemo_rl and target()
        except StepsError:
            nemo_rl = None
        if not nemo_rl:
            return read_config(path, overrides, entry)
        from runners.nemo_rl import checkout

        home = entry.config_dir
        return CompiledValues(
            checkout.compile_for(nemo_rl, run.get("algorithm"), path, list(overrides), home)
        )

    return read


def nemo_rl_record(target: Any) -> dict | None:
    """What a NeMo-RL stage's record keeps of its NeMo-RL (None for other runners)."""
    if target is None:
        return None
    version = target.version
    return {"version": nemo_rl_label(target), "commit": version.commit if version else None}


def _algorithm(stage: Any) -> str | None:
    from catalog.discovery import MANIFEST
    from catalog.tomlfile import load_toml

    run = load_toml(stage.step_dir / MANIFEST).get("run")
    return run.get("algorithm") if isinstance(run, dict) else None


def stage_argv(
    stage: Any, overrides: list[str], options: Any, runs_dir: Path, force: bool
) -> list[str]:
    """`python -m steps run <step> ...` for a stage; `overrides` must be secret-free."""
    argv = [sys.executable, "-m", "steps", "run", stage.step, "--config", str(stage.config)]
    for port, b in [*stage.inputs.items(), *stage.outputs.items()]:
        argv.append(f"--input={port}={b.value}")
    argv += [f"--runs-dir={runs_dir}"] + [f"--catalog={c}" for c in options.catalog]
    if options.nemo_rl:
        argv.append(f"--nemo-rl={options.nemo_rl}")
    if force:
        argv.append("--force")
    if getattr(stage, "dry_run", False):
        argv.append("--dry-run")
    return argv + getattr(options, "stage_args", {}).get(stage.id, []) + overrides


def inputs_now(stage: Any) -> dict:
    return {
        p: {
            "value": b.value,
            "source": b.source,
            "type": b.type,
            "fingerprint": fingerprint(b.value, b.hub),
        }
        for p, b in stage.inputs.items()
    }


def outputs_now(stage: Any) -> dict:
    return {
        p: {"value": b.value, "type": b.type, "fingerprint": fingerprint(b.value)}
        for p, b in stage.outputs.items()
    }


def contract_ok(type_name: str, path: str) -> bool:
    """The output exists and still passes its type's contract."""
    if not os.path.exists(path):
        return False
    from catalog.contracts import validate_artifact

    try:
        return validate_artifact(type_name, path, max_errors=1).ok
    except StepsError:
        return False


def cache_hit(record: dict | None, key: str, stage: Any) -> bool:
    """The stage completed with this key and its outputs are unchanged (or still valid)."""
    if not record or record.get("status") != "completed" or record.get("cache_key") != key:
        return False
    for port, out in outputs_now(stage).items():
        then = record.get("outputs", {}).get(port, {})
        if out["fingerprint"] == then.get("fingerprint") and "missing" not in out["fingerprint"]:
            continue
        if not contract_ok(out["type"], out["value"]):
            return False
    return True


def move_aside(stage: Any, sdir: Path) -> list[str]:
    """Move outputs of a different job under `<stage>/_stale/`, keeping only the last per port (a
    forced rerun of a checkpointing stage would otherwise keep a copy per rerun)."""
    moved = []
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    stale = sdir / "_stale"
    for port, b in stage.outputs.items():
        p = Path(b.value)
        if not p.exists():
            continue
        stale.mkdir(parents=True, exist_ok=True)
        older = sorted(stale.glob(f"{port}-*"))
        dest = stale / f"{port}-{stamp}"
        if dest.exists() or dest.is_symlink():
            dest = stale / f"{port}-{stamp}-{os.getpid()}-{time.monotonic_ns()}"
        os.replace(p, dest)
        for old in older:  # after the move: the newest aside is never lost
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    old.unlink()
        moved.append(str(dest))
    return moved


def _stop(proc: subprocess.Popen, signum: int) -> None:
    """Forward `signum` to the child's process group; kill it if it outlives the grace."""
    try:
        os.killpg(proc.pid, signum)
        proc.wait(timeout=GRACE_S)
    except ProcessLookupError:
        pass
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _dies_with(driver: int) -> Callable[[], None] | None:
    """In the child before it runs: SIGTERM when the driver dies (PR_SET_PDEATHSIG), so a SIGKILLed
    driver leaves no stage running; a driver already gone is not waited for."""
    if not sys.platform.startswith("linux"):
        return None

    def set_up() -> None:
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != driver:
            os.kill(os.getpid(), signal.SIGTERM)

    return set_up


def run_child(
    argv: list[str], log: Path, out: TextIO, env: Mapping[str, str], secrets: Mapping[str, str]
) -> int:
    """Run one stage, its redacted output to the stage log and to `out` (a JSON summary folded to
    one line); an interrupt is forwarded to the child, awaited, and re-raised."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as fh:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            env=dict(env),
            bufsize=1,
            start_new_session=True,  # our own group: an interrupt is forwarded exactly once
            preexec_fn=_dies_with(os.getpid()),
        )
        assert proc.stdout is not None
        folded = 0  # lines of a JSON summary not echoed (from a line "{" to a line "}")
        try:
            for line in proc.stdout:
                line = redact_text(line, secrets)
                fh.write(line)
                if folded or line == "{\n":
                    folded += 1
                    if line == "}\n":
                        out.write(f"  | {{...}} (the run's summary, {folded} lines: {log})\n")
                        folded = 0
                    continue
                out.write(f"  | {line}")
            return proc.wait()
        except KeyboardInterrupt as exc:
            _stop(proc, getattr(exc, "signum", signal.SIGINT))
            fh.write(f"[pipeline] interrupted ({exc}); the stage was stopped\n")
            raise
        finally:
            proc.stdout.close()
