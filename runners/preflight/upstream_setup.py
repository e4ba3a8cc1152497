"""NeMo-RL's own CPU-side setup up to the GPU (issue 38), in the upstream judge's subprocess
(`upstream_program` is appended to this text). Stdlib and `nemo_rl` only, Python 3.8 syntax.

The stages follow v0.7.0's examples/run_{grpo,dpo}.py and `algorithms.*.setup`: data (first
rows, big files bounded, never the hub), logger (offline, in a scratch folder), resume, loss,
environments. A failure raised inside NeMo-RL is a verdict (`{stage, level, error, frame,
keys}`); one from our call not fitting a release is `skipped`, never a false error.
"""

import copy
import itertools
import json
import linecache
import os
import re
import shutil
import sys
import tempfile
import traceback

CORRECT = ("The answer is \\boxed{2}", "Answer: 2")  # hf_math_verify's form, dapo_math_verify's
ROWS = 4  # rows run through upstream's processing per dataset
BIG = 8 << 20  # bytes: a line-oriented data file over this is judged on its first lines
HEAD_LINES = 256
HUB_ERRORS = ("OfflineModeIsEnabled", "LocalEntryNotFoundError", "DatasetNotFoundError",
              "ConnectionError", "HFValidationError")  # fmt: skip
LINE_FORMATS = (".jsonl", ".csv", ".txt")
LOSSES = {"grpo": ("ClippedPGLossFn", "loss_fn"), "dpo": ("DPOLossFn", "dpo")}  # class, section
NEMO_RL = os.sep + "nemo_rl" + os.sep
LOGGER_CLASSES = {"WandbLogger": "wandb", "TensorboardLogger": "tensorboard",
                  "MLflowLogger": "mlflow", "SwanlabLogger": "swanlab"}  # fmt: skip


class NotJudged(Exception):
    """This release's API is not the one a stage calls: nothing to say."""


def _said(exc):
    lines = [t.strip() for t in str(exc).splitlines() if t.strip()]
    return type(exc).__name__ + (": " + lines[0][:400] if lines else "")


def _upstream_frames(exc):
    """The traceback's frames inside NeMo-RL's package (innermost last)."""
    return [f for f in traceback.extract_tb(exc.__traceback__) if NEMO_RL in f.filename]


def _rel(filename):
    cut = filename.rfind(NEMO_RL)
    return filename[cut + 1 :] if cut >= 0 else filename


def _context(frame):
    """The failing statement and the `if`/`elif` lines enclosing it: what the check reads."""
    lines = [linecache.getline(frame.filename, frame.lineno)]
    indent = len(lines[0]) - len(lines[0].lstrip())
    for n in range(frame.lineno + 1, frame.lineno + 8):  # the rest of a multi-line statement
        text = linecache.getline(frame.filename, n)
        if not text.strip() or len(text) - len(text.lstrip()) <= indent:
            break
        lines.append(text)
    for n in range(frame.lineno - 1, max(0, frame.lineno - 40), -1):
        text = linecache.getline(frame.filename, n)
        depth = len(text) - len(text.lstrip())
        if text.strip() and depth < indent:
            if re.match(r"\s*(def|class)\b", text):
                break
            if re.match(r"\s*(if|elif)\b", text):
                lines.insert(0, text)
            indent = depth
    return "".join(lines)


def flat(node, prefix):
    """Dotted keys and leaf values of a config section (list items as `[i]`)."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.extend(flat(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(flat(v, f"{prefix}[{i}]"))
    else:
        out.append((prefix, node))
    return out


def keys_of(exc, section, node, frames):
    """The config keys a failure is about: the one whose value the message quotes, then its
    siblings that the failing check's source reads."""
    said = str(exc)
    leaves = flat(node, section)
    quoted = [k for k, v in leaves if isinstance(v, str) and len(v) > 2 and v in said]
    quoted.sort(key=lambda k: re.split(r"[.\[]", k)[-1] not in said)  # stable: order kept
    words = re.findall(r"[A-Za-z_]\w*", _context(frames[-1])) if frames else []
    named = dict.fromkeys(k for w in words for k, _ in leaves if re.split(r"[.\[]", k)[-1] == w)
    keys = quoted[:1] + [k for k in named if k not in quoted[:1]]
    parent = keys[0].rsplit(".", 1)[0] if keys else ""
    return keys[:1] + [k for k in keys[1:] if k.rsplit(".", 1)[0] == parent]  # its siblings


def failure(stage, exc, section, node, level="error", restore=None, mirrored=False):
    """A verdict from an exception raised in NeMo-RL (or a line of it we `mirrored`), else
    NotJudged."""
    frames = _upstream_frames(exc)
    if not frames and not mirrored:
        raise NotJudged(_said(exc))
    error = _said(exc)
    for scratch, original in (restore or {}).items():
        error = error.replace(scratch, original)
    last = frames[-1] if frames else None
    return {
        "stage": stage,
        "level": level,
        "error": error,
        "frame": f"{_rel(last.filename)}:{last.lineno} in {last.name}" if last else None,
        "keys": keys_of(exc, section, node, frames) or [section],
    }


def _is_hub(exc):
    seen = exc
    while seen is not None:
        if type(seen).__name__ in HUB_ERRORS or "offline" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def bound_data(node, scratch, restore):
    """Local line-oriented data files over BIG replaced by copies of their first lines."""
    if isinstance(node, list):
        for item in node:
            bound_data(item, scratch, restore)
        return
    if not isinstance(node, dict):
        return
    for key, value in list(node.items()):
        if isinstance(value, (dict, list)):
            bound_data(value, scratch, restore)
        elif key in ("data_path", "val_data_path") or (isinstance(value, str) and key == "path"):
            path = os.path.expanduser(str(value))
            if not (path.endswith(LINE_FORMATS) and os.path.isfile(path)):
                continue
            if os.path.getsize(path) <= BIG:
                continue
            copy_path = os.path.join(scratch, f"{len(restore)}-{os.path.basename(path)}")
            with open(path, "rb") as src, open(copy_path, "wb") as dst:
                dst.writelines(itertools.islice(src, HEAD_LINES))
            node[key] = copy_path
            restore[copy_path] = str(value)


def _row_source(data, part):
    """The key and value of the data file a dataset entry reads (the first of several)."""
    node = data.get(part) if isinstance(data, dict) else None
    entries = node if isinstance(node, list) else [node]
    for i, entry in enumerate(entries):
        if isinstance(entry, dict) and isinstance(entry.get("data_path"), str):
            index = f"[{i}]" if isinstance(node, list) else ""
            return f"data.{part}{index}.data_path", entry["data_path"]
    return f"data.{part}", None


def _lacking(data, column):
    """The dataset entry whose data file's first row lacks `column` (else the train one)."""
    for part in ("train", "validation"):
        key, path = _row_source(data, part)
        try:
            with open(os.path.expanduser(str(path)), encoding="utf-8") as fh:
                first = json.loads(fh.readline())
        except Exception:
            continue
        if isinstance(first, dict) and column not in first:
            return key, path
    return _row_source(data, "train")


def _rows(dataset):
    """Index the first rows, running upstream's processors on them as the first batch does."""
    parts = dataset.values() if isinstance(dataset, dict) else [dataset]
    for part in (p for p in parts if p is not None):
        for i in range(min(len(part), ROWS)):
            part[i]


def stage_data(algo, master, tokenizer, scratch):
    from nemo_rl.data import utils as data_utils

    original = _section(master, "data")
    data = copy.deepcopy(original)
    restore = {}
    bound_data(data, scratch, restore)
    try:
        if algo in ("dpo", "rm"):
            train, val = data_utils.setup_preference_data(tokenizer, data)
        elif algo in ("grpo", "distillation"):
            train, val = data_utils.setup_response_data(tokenizer, data, None)
        else:
            return []
    except Exception as exc:
        level = "warning" if _is_hub(exc) else "error"
        found = failure("data", exc, "data", original, level, restore)
        if isinstance(exc, KeyError) and exc.args:  # a column the class reads, absent in rows
            key, path = _lacking(original, str(exc.args[0]))
            found.update(keys=[key], rows_of=path)
        return [found]
    for part, dataset in (("train", train), ("validation", val)):
        try:
            _rows(dataset)
        except Exception as exc:  # a row the dataset class or its processor cannot take
            found = failure("data", exc, "data", original, "error", restore)
            key, path = _row_source(original, part)
            found.update(keys=[key], rows_of=path)
            return [found]
    return []


def _section(master, name):
    value = getattr(master, name, None) if not isinstance(master, dict) else master.get(name)
    return value if value is not None else {}


def stage_logger(module, master, scratch):
    logger_cls = getattr(module, "Logger", None)
    original = _section(master, "logger")
    if logger_cls is None or not isinstance(original, dict):
        raise NotJudged("no Logger")
    cfg = copy.deepcopy(original)
    cfg["log_dir"] = os.path.join(scratch, "logs")
    cfg["monitor_gpus"] = False  # a Ray actor: past the boundary
    cfg["swanlab_enabled"] = False  # a hosted service
    uri = str((cfg.get("mlflow") or {}).get("tracking_uri") or "")
    uri = uri or os.environ.get("MLFLOW_TRACKING_URI", "")
    if cfg.get("mlflow_enabled") and re.match(r"(https?|databricks)[:+]", uri):
        cfg["mlflow_enabled"] = False  # a server: not asked offline
    os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=scratch)
    here = os.getcwd()
    os.chdir(scratch)  # a backend's default store lands here, not in the user's folders
    try:
        logger_cls(cfg)
    except Exception as exc:
        backend = next((LOGGER_CLASSES[f.name.split(".")[0]] for f in _frames_named(exc)), None)
        section = f"logger.{backend}" if backend else "logger"
        node = original.get(backend, {}) if backend else original
        found = failure("logger", exc, section, node)
        first = "logger.mlflow.tracking_uri" if backend == "mlflow" and uri else None
        if first is None and backend and found["keys"] == [section]:
            first = f"logger.{backend}_enabled"
        if first:
            found["keys"] = [first] + [k for k in found["keys"] if k not in (first, section)]
        return [found]
    finally:
        os.chdir(here)
    return []


def _frames_named(exc):
    """Frames whose enclosing function belongs to a logger backend's class."""
    out = []
    for f in _upstream_frames(exc):
        text = "".join(linecache.getline(f.filename, n) for n in range(1, f.lineno))
        owner = re.findall(r"^class (\w+)", text, re.M)
        if owner and owner[-1] in LOGGER_CLASSES:
            f.name = owner[-1] + "." + f.name
            out.append(f)
    return out[-1:]


def stage_resume(algo, module, master):
    manager_cls = getattr(module, "CheckpointManager", None)
    cfg = _section(master, "checkpointing")
    if manager_cls is None or not isinstance(cfg, dict) or not cfg.get("checkpoint_dir"):
        raise NotJudged("no CheckpointManager")
    state_cls = next((getattr(module, n) for n in dir(module)
                      if n.lower() == algo + "savestate"), None)  # fmt: skip
    key, latest, mirrored = "checkpointing.checkpoint_dir", None, False
    try:
        manager = manager_cls(cfg)
        latest = manager.get_latest_checkpoint_path()
        info = manager.load_training_info(latest)
        fields = getattr(state_cls, "__dataclass_fields__", None)
        if info is not None and fields:  # a dataclass save state is built from it (dpo.py:185)
            if "total_valid_tokens" in fields:
                info.setdefault("total_valid_tokens", 0)
            mirrored = True
            state_cls(**{k: v for k, v in info.items() if k in fields})
    except Exception as exc:
        found = failure("resume", exc, "checkpointing", cfg, mirrored=mirrored)
        found["keys"] = [key]
        found["step"] = os.path.basename(str(latest)) if latest else None
        if mirrored and found["frame"] is None:
            found["frame"] = _built_at(module, state_cls.__name__)
        return [found]
    return []


def _built_at(module, name):
    """Where the algorithm's setup builds its save state (the line this stage mirrors)."""
    path = getattr(module, "__file__", None) or ""
    loaded = False
    for n, text in enumerate(linecache.getlines(path), 1):
        loaded = loaded or "load_training_info(" in text
        if loaded and name + "(" in text:
            return f"{_rel(path)}:{n} in setup"
    return None


def stage_loss(algo, module, master):
    import inspect

    if algo not in LOSSES:
        raise NotJudged("no loss for " + algo)
    name, section = LOSSES[algo]
    loss_cls, cfg = getattr(module, name, None), _section(master, section)
    if loss_cls is None or not cfg:
        raise NotJudged("no loss class")
    kwargs = {}
    if "use_linear_ce_fusion" in inspect.signature(loss_cls.__init__).parameters:
        mcfg = (_section(master, "policy").get("megatron_cfg") or {})  # fmt: skip
        kwargs["use_linear_ce_fusion"] = bool(
            mcfg.get("enabled") and mcfg.get("use_linear_ce_fusion_loss")
        )
    try:
        loss_cls(cfg, **kwargs)
    except Exception as exc:
        plain = cfg.model_dump() if hasattr(cfg, "model_dump") else cfg
        return [failure("loss", exc, section, plain)]
    return []


def stage_env(master):
    """Each math environment's verifier scores a known-correct answer (what its workers run)."""
    from nemo_rl.environments import math_environment

    worker = getattr(math_environment, "HFVerifyWorker", None)
    worker = getattr(worker, "__ray_actor_class__", worker)
    envs = _section(master, "env")
    out = []
    for name, cfg in envs.items() if isinstance(envs, dict) else []:
        if not isinstance(cfg, dict) or "math_verify_impl" not in cfg or worker is None:
            continue
        impl = cfg.get("math_verify_impl") or "hf_math_verify"
        verifier = worker()
        scores = [verifier.verify([answer], ["2"], math_verify_impl=impl)[0] for answer in CORRECT]
        if max(scores) < 1.0:  # each verifier takes one of these forms
            said = " and ".join(repr(a) for a in CORRECT)
            out.append({"stage": "env", "level": "error", "frame": None,
                        "keys": [f"env.{name}.math_verify_impl"],
                        "error": f"its verifier scores the correct answers {said} for 2 as "
                                 f"{scores} with math_verify_impl={impl!r}: every reward would "
                                 "be 0"})  # fmt: skip
    return out


def judge_setup(algo, module, master, tokenizer):
    """Every stage that can run on CPU; `{"failures": [...], "skipped": {stage: why}}`."""
    scratch = tempfile.mkdtemp(prefix="steps-judge-")
    failures, skipped = [], {}
    stages = [("logger", lambda: stage_logger(module, master, scratch)),
              ("resume", lambda: stage_resume(algo, module, master)),
              ("loss", lambda: stage_loss(algo, module, master)),
              ("env", lambda: stage_env(master))]  # fmt: skip
    if tokenizer is not None:
        stages.insert(0, ("data", lambda: stage_data(algo, master, tokenizer, scratch)))
    try:
        for name, run in stages:
            try:
                failures.extend(run())
            except MemoryError:
                raise
            except NotJudged as why:
                skipped[name] = str(why)
            except Exception as exc:  # our call does not fit this release
                skipped[name] = _said(exc)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.stdout.flush()
    return {"failures": failures, "skipped": skipped}
