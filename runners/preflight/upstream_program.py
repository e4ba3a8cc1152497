"""Run by NeMo-RL's own interpreter (a subprocess of `upstream_judge`): upstream's code judges one
compiled config; the answer is one marked JSON line on stdout. Stdlib and `nemo_rl` only, Python
3.8 syntax, never imports steps. It does what the example scripts do before any GPU work:
`MasterConfig(**config)`, `get_tokenizer` with one chat render, then `upstream_setup`'s stages.
"""

import importlib
import importlib.util
import json
import os
import sys

MARK = "STEPS-UPSTREAM-JUDGE "


def _said(exc: BaseException) -> str:
    lines = [t.strip() for t in str(exc).splitlines() if t.strip()]
    return type(exc).__name__ + (": " + lines[0][:300] if lines else "")


def judge_config(master: object, config: dict) -> tuple:
    """pydantic's errors as [{loc, type, msg}] (never the input: it may hold a secret), None
    where MasterConfig is not a model; and the config the setup stages get (None if refused)."""
    if not hasattr(master, "model_validate"):
        return None, config
    from pydantic import ValidationError

    try:
        built = master(**config)  # type: ignore[operator]  # as examples/run_*.py call it
    except ValidationError as exc:
        return [
            {"loc": list(e["loc"]), "type": e["type"], "msg": e["msg"]}
            for e in exc.errors(include_url=False)
        ], None
    return [], built


def judge_tokenizer(config: dict) -> tuple:
    """None when the tokenizer loads and renders a chat, else what failed (a hub id offline:
    `skipped`); and the tokenizer."""
    policy = config.get("policy")
    tokenizer = policy.get("tokenizer") if isinstance(policy, dict) else None
    if not isinstance(tokenizer, dict) or not isinstance(tokenizer.get("name"), str):
        return None, None
    from nemo_rl.algorithms.utils import get_tokenizer

    try:
        loaded = get_tokenizer(tokenizer)
    except Exception as exc:
        local = os.path.isdir(os.path.expanduser(tokenizer["name"]))
        return {"stage": "load" if local else "skipped", "error": _said(exc)}, None
    try:
        loaded.apply_chat_template(
            [{"role": "user", "content": "hello"}], tokenize=False, add_generation_prompt=True
        )
    except Exception as exc:
        return {"stage": "chat_template", "error": _said(exc)}, None
    return None, loaded


def judge(request: dict) -> dict:
    if importlib.util.find_spec("nemo_rl") is None:
        return {"status": "absent"}
    try:
        module = importlib.import_module("nemo_rl.algorithms." + request["algorithm"])
        version = getattr(importlib.import_module("nemo_rl"), "__version__", None)
    except MemoryError:
        raise  # over the cap: the judge failed, not NeMo-RL's absence
    except Exception as exc:  # no torch, a broken install: the interpreter rule's to judge
        return {"status": "unavailable", "detail": _said(exc)}
    master = getattr(module, "MasterConfig", None)
    config = request["config"]
    errors, built = judge_config(master, config) if master is not None else (None, config)
    said, tokenizer = judge_tokenizer(config)
    answer = {
        "status": "judged",
        "version": version,
        "source": getattr(module, "__file__", None),
        "config_errors": errors,
        "tokenizer": said,
    }
    setup = globals().get("judge_setup")  # upstream_setup's text, sent ahead of this one
    if setup is not None and built is not None and request.get("setup", True):
        answer["setup"] = setup(request["algorithm"], module, built, tokenizer)
    return answer


def cap_memory(limit: object) -> None:
    """The address space this process may map (upstream's imports included), as asked."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))  # type: ignore[call-overload]
    except (ImportError, ValueError, TypeError, OSError):
        pass  # no limit to set here (or a lower one already): the timeout still bounds it


def main() -> None:
    request = json.loads(sys.stdin.read())
    cap_memory(request.get("memory"))
    answer = judge(request)
    sys.stdout.write("\n" + MARK + json.dumps(answer, default=str) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # a logger's service thread or process must not hold the answer back


if __name__ == "__main__":
    main()
