"""A toy catalog for pipeline tests: its own types and steps, independent of the shipped steps."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

TYPES = """\
[toy_blend]
description = "A blend."
layout = "file"

[toy_rows]
description = "Rows."
layout = "jsonl"

[toy_gym_rows]
description = "Gym rows."
is_a = ["toy_rows"]
layout = "jsonl"

[toy_pref_rows]
description = "Preference rows."
is_a = ["toy_rows"]
layout = "jsonl"

[toy_hf]
description = "An HF folder."
layout = "dir"

[toy_megatron]
description = "A Megatron checkpoint."
layout = "dir"
convert_to = [{ type = "toy_hf", via = "toy/to_hf" }]

[toy_run]
description = "A training run's checkpoint dir."
is_a = ["toy_megatron"]
layout = "dir"

[toy_scores]
description = "Scores."
layout = "file"
"""


def _port(kind: str, name: str, type_: str, keys: list[str], **extra) -> str:
    lines = [f"[[{kind}]]", f'name = "{name}"', f'type = "{type_}"', 'description = "x"']
    lines.append("config_keys = [" + ", ".join(f'"{k}"' for k in keys) + "]")
    for k, v in extra.items():
        lines.append(f"{k} = {'true' if v is True else 'false' if v is False else repr(v)}")
    return "\n".join(lines).replace("'", '"')


STEPS: dict[str, tuple[str, list[str], str]] = {
    # id: (runner, ports, default.yaml)
    "toy/prep": (
        "rl_prep",
        [
            _port("consumes", "blend", "toy_blend", ["blend_path"]),
            _port("produces", "data", "toy_rows", ["output_dir"], type_key="output_type"),
        ],
        "blend_path: ???\noutput_dir: ???\noutput_type: toy_gym_rows\n",
    ),
    "toy/train": (
        "nemo_rl",
        [
            _port("consumes", "train", "toy_rows", ["data.train"]),
            _port("consumes", "validation", "toy_rows", ["data.val"], required=False),
            _port("consumes", "policy", "toy_hf", ["policy.model"]),
            _port("produces", "checkpoint", "toy_run", ["ckpt.dir"]),
        ],
        "data:\n  train: ???\n  val: null\npolicy:\n  model: org/model\nckpt:\n  dir: results\n",
    ),
    "toy/pref_train": (
        "nemo_rl",
        [
            _port("consumes", "train", "toy_pref_rows", ["data.train"]),
            _port("consumes", "policy", "toy_hf", ["policy.model"]),
            _port("produces", "checkpoint", "toy_run", ["ckpt.dir"]),
        ],
        "data:\n  train: ???\npolicy:\n  model: ???\nckpt:\n  dir: results\n",
    ),
    "toy/to_hf": (
        "megatron_to_hf",
        [
            _port("consumes", "checkpoint", "toy_megatron", ["src"]),
            _port("consumes", "reference", "toy_hf", ["ref"], parameter=True),
            _port("produces", "hf", "toy_hf", ["dst"]),
        ],
        "src: ???\nref: ???\ndst: ???\n",
    ),
    "toy/eval": (
        "nemo_rl",
        [
            _port("consumes", "model", "toy_hf", ["model_path"]),
            _port("produces", "scores", "toy_scores", ["out"]),
        ],
        "model_path: ???\nout: ???\n",
    ),
    "toy/split": (
        "rl_prep",
        [
            _port("consumes", "data", "toy_rows", ["src"]),
            _port("produces", "left", "toy_gym_rows", ["left"]),
            _port("produces", "right", "toy_gym_rows", ["right"]),
        ],
        "src: ???\nleft: ???\nright: ???\n",
    ),
}


def toy_catalog(root: Path) -> Path:
    """Write the toy types and steps under `root` (a catalog root)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "types.toml").write_text(TYPES, encoding="utf-8")
    for sid, (runner, ports, default) in STEPS.items():
        d = root / sid
        (d / "config").mkdir(parents=True, exist_ok=True)
        head = (
            f'[step]\nid = "{sid}"\nname = "{sid}"\ncategory = "toy"\ndescription = "x"\n'
            f'version = "0.1.0"\n\n[run]\nrunner = "{runner}"\n\n'
        )
        (d / "step.toml").write_text(head + "\n\n".join(ports) + "\n", encoding="utf-8")
        (d / "config" / "default.yaml").write_text(default, encoding="utf-8")
    return root


def write_pipeline(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def steps_main(*argv: str, cwd: Path, env: dict | None = None, drop: tuple = ()) -> CliResult:
    """`python -m steps ...` called in this process (faster than `steps_cli`): same cwd and
    environment handling, output captured; `drop` names variables to unset."""
    import pytest

    from steps.cli import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(out), redirect_stderr(err):
        for name in ("STEPS_PATH", *drop):
            mp.delenv(name, raising=False)
        mp.setenv("STEPS_CACHE_DIR", str(cwd / ".cache"))
        for name, value in (env or {}).items():
            mp.setenv(name, value)
        mp.chdir(cwd)
        code = main(list(argv))
    return CliResult(code, out.getvalue(), err.getvalue())


def steps_cli(*argv: str, cwd: Path, env: dict | None = None, timeout: int = 300):
    full = {k: v for k, v in os.environ.items() if k != "STEPS_PATH"}
    full.update(env or {})
    full.setdefault("STEPS_CACHE_DIR", str(cwd / ".cache"))
    return subprocess.run(
        [sys.executable, "-m", "steps", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full,
        timeout=timeout,
    )


# A stand-in NeMo-RL example script: reads --config, writes the checkpoint layout NeMo-RL's
# Megatron backend leaves in checkpointing.checkpoint_dir after step 2.
FAKE_TRAIN = """\
import argparse, json, os, sys
import yaml
p = argparse.ArgumentParser()
p.add_argument("--config")
a, _ = p.parse_known_args()
cfg = yaml.safe_load(open(a.config))
if os.environ.get("FAKE_NEMO_RL_ENV_LOG"):  # which secret variables reached the job
    secret = {k: v for k, v in os.environ.items() if k.startswith("STEPS_SECRET_")}
    json.dump(secret, open(os.environ["FAKE_NEMO_RL_ENV_LOG"], "w"))
if os.environ.get("FAKE_NEMO_RL_WAIT"):  # a long job: say so, then wait to be interrupted
    import signal, time
    marker = os.environ["FAKE_NEMO_RL_WAIT"]
    def stop(signum, frame):
        open(marker + ".signal", "w").write(str(signum))
        sys.exit(130)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    open(marker + ".tmp", "w").write(str(os.getpid()))
    os.replace(marker + ".tmp", marker)
    time.sleep(120)
if os.environ.get("FAKE_NEMO_RL_FAIL"):
    print("stand-in failure: CUDA out of memory", file=sys.stderr)
    sys.exit(3)
with open(os.environ.get("FAKE_NEMO_RL_LOG", os.devnull), "a") as log:
    log.write(a.config + "\\n")
step = os.path.join(cfg["checkpointing"]["checkpoint_dir"], "step_2")
it = os.path.join(step, "policy", "weights", "iter_0000002")
os.makedirs(it, exist_ok=True)
json.dump({"step": 2}, open(os.path.join(step, "training_info.json"), "w"))
open(os.path.join(step, "config.yaml"), "w").write(open(a.config).read())
json.dump({"sharded_backend": "torch_dist"}, open(os.path.join(it, "metadata.json"), "w"))
open(os.path.join(it, ".metadata"), "wb").write(b"meta")
open(os.path.join(it, "__0_0.distcp"), "wb").write(b"w" * 64)
open(os.path.join(it, "run_config.yaml"), "w").write("model: {}\\n")
print("stand-in trained 2 steps")
"""

# A stand-in Megatron-Bridge export: writes a Hugging Face folder.
FAKE_EXPORT = """\
import argparse, json, os, struct
p = argparse.ArgumentParser()
p.add_argument("mode")
p.add_argument("--hf-path")
p.add_argument("--megatron-path")
a, _ = p.parse_known_args()
os.makedirs(a.hf_path, exist_ok=True)
json.dump({"model_type": "qwen3", "exported_from": a.megatron_path},
          open(os.path.join(a.hf_path, "config.json"), "w"))
head = json.dumps({"__metadata__": {}}).encode()
with open(os.path.join(a.hf_path, "model.safetensors"), "wb") as fh:
    fh.write(struct.pack("<Q", len(head)) + head)
json.dump({"version": "1.0"}, open(os.path.join(a.hf_path, "tokenizer.json"), "w"))
print("stand-in export", a.megatron_path, "->", a.hf_path)
"""


def stand_ins(base: Path) -> tuple[Path, Path]:
    """(NeMo-RL checkout, Megatron-Bridge root) whose scripts write plausible layouts."""
    nemo, bridge = base / "nemo-rl", base / "megatron-bridge"
    for rel in (
        "examples/run_grpo.py",
        "examples/run_dpo.py",
        "examples/nemo_gym/run_grpo_nemo_gym.py",
    ):
        (nemo / rel).parent.mkdir(parents=True, exist_ok=True)
        (nemo / rel).write_text(FAKE_TRAIN, encoding="utf-8")
    script = bridge / "scripts" / "conversion" / "run_conversion.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(FAKE_EXPORT, encoding="utf-8")
    return nemo, bridge
