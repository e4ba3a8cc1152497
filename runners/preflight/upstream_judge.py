"""Where NeMo-RL can judge, ask it (issue 29): the launch interpreter runs upstream's own checks.

When the interpreter a local launch starts imports `nemo_rl`, one bounded subprocess there
(`upstream_program`: offline, memory-capped, killed with its children at the timeout) builds the
`MasterConfig`, loads the tokenizer and renders a chat, then runs NeMo-RL's CPU-side setup
(`upstream_setup`; `upstream_verdicts` makes the findings). Its answer is cached under
STEPS_CACHE_DIR, keyed by everything that decides it (`cache_key`). A judge that cannot finish
is a warning, never an error; an upstream verdict and our rule on one key are one cause.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from catalog.atomic_write import write_atomic
from catalog.errors import Finding
from catalog.record_file import read_json
from runners.preflight import PreflightContext, rule
from runners.preflight.folds import CONFIG, TOKENIZER
from runners.preflight.topology import UNRESOLVED, algorithm, finding, strings, warning

PROGRAM = Path(__file__).with_name("upstream_program.py")
SETUP = Path(__file__).with_name("upstream_setup.py")
MARK = "STEPS-UPSTREAM-JUDGE "
SECONDS_VAR = "STEPS_UPSTREAM_JUDGE_SECONDS"  # in the launch env; 0 turns the judge off
DEFAULT_SECONDS = 180.0  # torch + transformers + ray imports on a cold file system
MEMORY_BYTES = 16 << 30  # address space; v0.7.0's imports + a tokenizer map 4.9 GiB (1.1 resident)
CACHE_FORMAT = 2
JUDGE = "W-UPSTREAM-JUDGE"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
_KEY_VARS = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "HF_HOME", "HF_HUB_CACHE")
_SOURCES = ("pyproject.toml", "uv.lock", "nemo_rl/__init__.py", "nemo_rl/algorithms/utils.py")
_KEPT = ("absent", "unavailable", "judged")  # answers worth caching; a failure is asked again


def judge_seconds(env: Mapping[str, str]) -> float:
    """The judge's own bound ($STEPS_UPSTREAM_JUDGE_SECONDS; 0: no judge)."""
    try:
        return max(0.0, float(env.get(SECONDS_VAR, DEFAULT_SECONDS)))
    except ValueError:
        return DEFAULT_SECONDS


def cache_dir(env: Mapping[str, str]) -> Path:
    """`$STEPS_CACHE_DIR` (else `$XDG_CACHE_HOME`, else ~/.cache)`/nemo-rl-steps/upstream`."""
    from catalog.discovery import cache_home

    return cache_home(env, "upstream")


def _stat(path: Path | str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino]


def _tokenizer_state(config: dict) -> list:
    """What a tokenizer folder holds (names and stats): an edit there changes the verdict."""
    name = ((config.get("policy") or {}).get("tokenizer") or {}).get("name")
    folder = Path(os.path.expanduser(name)) if isinstance(name, str) and name else None
    if folder is None or not folder.is_dir():
        return []
    try:
        return sorted((p.name, _stat(p)) for p in folder.iterdir())
    except OSError:
        return []


def program_source() -> str:
    """The judge program as one text (the setup stages, then the entry point): it reads
    `request()` on stdin and prints one `MARK` line."""
    return SETUP.read_text(encoding="utf-8") + "\n\n" + PROGRAM.read_text(encoding="utf-8")


def request(algo: str, config: dict, setup: bool = True) -> str:
    """What the program reads on stdin (the config without our `run` section)."""
    sent = {k: v for k, v in config.items() if k != "run"}
    doc = {"algorithm": algo, "config": sent, "memory": MEMORY_BYTES, "setup": setup}
    return json.dumps(doc, default=str)


def _class_modules(config: dict, env: Mapping[str, str]) -> list:
    """The files of the modules a dotted data.*.dataset_name imports from PYTHONPATH."""
    from runners.preflight.data_loader import module_found

    found: list = []
    roots = [r for r in env.get("PYTHONPATH", "").split(os.pathsep) if r]
    for _, text in strings(config.get("data")):
        if "." not in text or "/" in text or not re.fullmatch(r"[\w.]+\.[A-Za-z_]\w*", text):
            continue
        path = module_found(text.rsplit(".", 1)[0], roots) if roots else None
        if path is not None and os.path.isfile(path):
            found.append((path, _stat(path)))
    return found


def inputs_state(config: dict, env: Mapping[str, str] | None = None) -> list:
    """What the setup stages read besides the config: each file a `data` or `env` string names,
    the checkpoint folder's step_N entries and the latest one's training_info.json, and a
    dotted dataset class's module files. An edit to any of them asks upstream again."""
    state: list = []
    for section in ("data", "env"):
        for _, text in strings(config.get(section)):
            if "/" in text or text.endswith((".json", ".jsonl", ".csv", ".txt", ".parquet")):
                state.append((text, _stat(os.path.expanduser(text))))
    ckpt = (config.get("checkpointing") or {}).get("checkpoint_dir")
    if isinstance(ckpt, str) and ckpt:
        folder = Path(os.path.expanduser(ckpt))
        try:
            steps = sorted(p.name for p in folder.iterdir() if p.name.startswith("step_"))
        except OSError:
            steps = []
        latest = max(steps, key=lambda n: int(n[5:]) if n[5:].isdigit() else -1, default=None)
        info = _stat(folder / latest / "training_info.json") if latest else None
        state.append((ckpt, _stat(folder), steps, info))
    return state + _class_modules(config, env or {})


def cache_key(launch: Any, facts: Any, algo: str, config: dict) -> str:
    """The config's digest plus everything else that decides upstream's answer."""
    from runners.digest import DigestMemo, memo_file

    memo = DigestMemo(memo_file(launch.env))
    checkout = Path(launch.checkout).resolve()
    sources = [*_SOURCES, f"nemo_rl/algorithms/{algo}.py"]
    digests = {rel: memo.digest(checkout / rel) for rel in sources if (checkout / rel).is_file()}
    memo.save()
    parts = [
        CACHE_FORMAT,
        algo,
        hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest(),
        list(launch.launcher.argv),
        str(checkout),
        [facts.executable, facts.version, {s: _stat(s) for s in facts.sites}],
        digests,
        sorted((k, v) for k, v in launch.env.items() if k in _KEY_VARS or k.startswith("UV_")),
        _tokenizer_state(config),
        inputs_state(config, launch.env),
        hashlib.sha256(program_source().encode()).hexdigest(),
    ]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def marked_json(text: str, mark: str) -> dict | None:
    """The JSON object on the last line starting with `mark`; None when there is none."""
    for line in reversed(text.splitlines()):
        if line.startswith(mark):
            try:
                doc = json.loads(line[len(mark) :])
            except ValueError:
                return None
            return doc if isinstance(doc, dict) else None
    return None


def run_judge(launch: Any, algo: str, config: dict, seconds: float) -> dict:
    """Upstream's answer, or `{"status": "failed", "detail"}` when it gave none in time."""
    env = {**launch.env, **OFFLINE, "CUDA_VISIBLE_DEVICES": ""}
    if launch.launcher.is_uv_run:
        env["UV_NO_SYNC"] = "1"
    argv = [*launch.launcher.argv, "-c", program_source()]
    try:
        proc = subprocess.Popen(  # the launcher the user chose, no shell
            argv, cwd=launch.checkout, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, encoding="utf-8", errors="replace", start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        return {"status": "failed", "detail": f"cannot start `{argv[0]}`: {exc.strerror or exc}"}
    try:
        out, err = proc.communicate(request(algo, config), timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the launcher and its children
        proc.communicate()
        return {"status": "failed", "detail": f"no answer within {seconds:.0f} s"}
    answer = marked_json(out, MARK)
    if answer is not None and answer.get("status") in _KEPT:
        return answer
    said = [t.strip() for t in (err + "\n" + out).splitlines() if t.strip()]
    detail = said[-1][:300] if said else "it printed nothing"
    return {"status": "failed", "detail": f"exit {proc.returncode}: {detail}"}


def ask_upstream(launch: Any, facts: Any, algo: str, config: dict, seconds: float) -> dict:
    """`run_judge`, through the cache."""
    path = cache_dir(launch.env) / f"{cache_key(launch, facts, algo, config)}.json"
    try:
        cached = read_json(path)
        if isinstance(cached, dict) and cached.get("status") in _KEPT:
            return cached
    except (OSError, ValueError):
        pass
    answer = run_judge(launch, algo, config, seconds)
    if answer.get("status") in _KEPT:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, json.dumps(answer) + "\n")
        except OSError:
            pass  # a read-only cache only costs the subprocess next time
    return answer


def config_key(config: Any, loc: list, missing: bool) -> tuple[str, str]:
    """pydantic's `loc` as our dotted key and the part under it (a union member's name such as
    `DTensorConfig`, which the config does not hold; or, last in a `missing` error, the key)."""
    key, node = "", config
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            key, node = f"{key}.{part}" if key else part, node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            key, node = f"{key}[{part}]", node[part]
        elif last and missing:
            return (f"{key}.{part}" if key else str(part)), ""
        else:
            rest = [str(p) for p in loc[i:] if isinstance(p, (str, int))]  # with the member
            return key, ".".join(rest)
    return key, ""


def _config_findings(ctx: PreflightContext, answer: dict) -> Iterator[Finding]:
    grouped: dict[str, list[str]] = {}
    for err in answer.get("config_errors") or []:
        key, under = config_key(ctx.config, err.get("loc") or [], err.get("type") == "missing")
        if ctx.get(key) == UNRESOLVED:
            continue  # unresolved_values says why
        said = f"{under}: {err.get('msg')}" if under else str(err.get("msg"))
        if said not in grouped.setdefault(key, []):
            grouped[key].append(said)
    source = Path(str(answer.get("source") or "")).name or "its algorithm module"
    version = answer.get("version") or "?"
    for key, saids in grouped.items():
        yield finding(
            ctx,
            CONFIG,
            key or "config",
            f"NeMo-RL {version}'s own MasterConfig ({source}) refuses it: {'; '.join(saids[:6])}"
            + (f" (+{len(saids) - 6} more)" if len(saids) > 6 else ""),
            f"set {key or 'the config'} as NeMo-RL's MasterConfig declares it",
        )


def _tokenizer_finding(ctx: PreflightContext, answer: dict) -> Iterator[Finding]:
    tok = answer.get("tokenizer")
    if not isinstance(tok, dict) or tok.get("stage") not in ("load", "chat_template"):
        return  # loaded, or a hub id this offline check could not fetch
    if tok["stage"] == "load":
        yield finding(
            ctx, TOKENIZER, "policy.tokenizer.name",
            f"NeMo-RL's get_tokenizer cannot load it: {tok.get('error')}",
            "point policy.tokenizer.name at a folder holding a Hugging Face tokenizer",
        )  # fmt: skip
        return
    yield finding(
        ctx, TOKENIZER, "policy.tokenizer.chat_template",
        f"the tokenizer NeMo-RL loads cannot render a chat (its data formatting does): "
        f"{tok.get('error')}",
        "set policy.tokenizer.chat_template (a Jinja template, or `default` for the tokenizer's "
        "own), or use a tokenizer that has one",
    )  # fmt: skip


@rule("upstream_judge")
def upstream_judge(ctx: PreflightContext) -> Iterator[Finding]:
    """E-UPSTREAM-*: the launch interpreter's own NeMo-RL refuses the config, the tokenizer or
    its CPU-side setup; W-UPSTREAM-JUDGE: that check could not finish."""
    launch, algo = ctx.local_launch, algorithm(ctx)
    seconds = judge_seconds(launch.env) if launch is not None else 0.0
    if launch is None or ctx.remote is not None or algo is None or seconds == 0:
        return
    from runners.launch.local import ProbeFailure

    facts = launch.probe()
    if isinstance(facts, ProbeFailure):
        return  # local_interpreter reports it
    if not facts.nemo_rl:
        return  # the program would answer `absent`: the probe already looked, as it does
    config = {k: v for k, v in ctx.config.items() if k != "run"}  # our own section, not sent
    answer = ask_upstream(launch, facts, algo, config, seconds)
    if answer.get("status") == "failed":
        yield warning(
            ctx, JUDGE, None,
            f"NeMo-RL's own check of this config in `{launch.launcher.text}` did not finish "
            f"({answer.get('detail')}); only steps' derived checks judged it",
            f"raise {SECONDS_VAR} (now {seconds:.0f}), or set it to 0 to skip this check",
        )  # fmt: skip
        return
    if answer.get("status") == "judged":
        from runners.preflight.upstream_verdicts import setup_findings

        yield from _config_findings(ctx, answer)
        yield from _tokenizer_finding(ctx, answer)
        yield from setup_findings(ctx, answer)
