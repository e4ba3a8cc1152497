"""Stand-in for a NeMo-RL example script: records what it was given, then exits as asked.

It writes argv, cwd, the config it was pointed at and the NAMES of the environment to
$FAKE_NEMO_RL_RECORD, says whether each variable in $FAKE_EXPECT_SECRETS arrived and a short
sha256 of its value (never the value itself), prints $FAKE_TICKS lines one per
$FAKE_TICK_SECONDS, then the lines of $FAKE_LOG_FILE (a NeMo-RL driver log excerpt: steps, a
failure signature), and exits with $FAKE_EXIT.

With $FAKE_STEP_SECONDS set it trains fake steps the way NeMo-RL does (the research note
nemo-rl-resume-2026-11): it resumes from the highest complete `step_N` under
checkpointing.checkpoint_dir, prints `===== Epoch e/E =====`, `===== Step s/S =====` (within the
epoch) and a loss line per step, saves into `tmp_step_N` and renames it to `step_N` with
policy/weights (stand-in torch DCP files), config.yaml and training_info.json ({epoch, step
within the epoch, total_steps, consumed_samples}) every save_period steps, at the last step
and when checkpoint_must_save_by (DD:HH:MM:SS, counted after setup, with the mean step time
fitted in) is reached, then prints `Timeout has been reached,
stopping training early` and exits 0. SIGTERM saves nothing: `*** SIGTERM received ***`, exit 134.
Each trained global step is appended to $FAKE_LEDGER. $FAKE_FAIL_AT_STEP=k prints
$FAKE_FAIL_LOG (lines split on `|`) before training step k and exits 1; with $FAKE_FAIL_ONCE=PATH
only while PATH does not exist (it is created), i.e. a transient failure. $FAKE_WAIT_AT_STEP=k
holds before training step k until the file $FAKE_WAIT_FOR exists (a test interrupts it there).
Knobs: FAKE_SETUP_SECONDS, FAKE_SAVE_SECONDS, FAKE_STEPS_PER_EPOCH (default 1000).
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--config")
args, overrides = parser.parse_known_args()
with open(args.config, encoding="utf-8") as fh:
    text = fh.read()
expected = os.environ.get("FAKE_EXPECT_SECRETS", "").split()
record = {
    "argv": sys.argv,
    "cwd": os.getcwd(),
    "config_arg": args.config,
    "config_text": text,
    "overrides": overrides,
    "env_names": sorted(os.environ),
    "secrets_present": {n: bool(os.environ.get(n)) for n in expected},
    "secrets_sha256": {
        n: hashlib.sha256(os.environ[n].encode()).hexdigest()[:16]
        for n in expected
        if n in os.environ
    },
}
if os.environ.get("FAKE_NEMO_RL_RECORD"):
    with open(os.environ["FAKE_NEMO_RL_RECORD"], "w", encoding="utf-8") as fh:
        json.dump(record, fh)
print(f"driver started: {os.path.basename(sys.argv[0])} --config {args.config}", flush=True)


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name) or default)


def seconds_of(deadline: str | None) -> float:
    """NeMo-RL's DD:HH:MM:SS (utils/timer.py convert_to_seconds); None is no deadline."""
    if not deadline:
        return float("inf")
    days, hours, minutes, seconds = map(int, str(deadline).split(":"))
    return days * 86400 + hours * 3600 + minutes * 60 + seconds


def on_sigterm(signum, frame):
    print("*** SIGTERM received ***", flush=True)
    os._exit(134)


def latest(ckpt_dir: str) -> dict | None:
    steps = []
    for name in os.listdir(ckpt_dir) if os.path.isdir(ckpt_dir) else []:
        m = re.fullmatch(r"step_(\d+)", name)
        if m and os.path.isfile(os.path.join(ckpt_dir, name, "training_info.json")):
            steps.append(int(m.group(1)))
    if not steps:
        return None
    with open(os.path.join(ckpt_dir, f"step_{max(steps)}", "training_info.json")) as fh:
        return json.load(fh)


def save(ckpt_dir: str, info: dict) -> None:
    n = info["total_steps"]
    print(f"Saving checkpoint for step {n}...", flush=True)
    tmp, final = os.path.join(ckpt_dir, f"tmp_step_{n}"), os.path.join(ckpt_dir, f"step_{n}")
    shutil.rmtree(tmp, ignore_errors=True)  # a stale tmp_step_N from a killed save
    os.makedirs(tmp)
    with open(os.path.join(tmp, "training_info.json"), "w") as fh:
        json.dump(info, fh)
    with open(os.path.join(tmp, "config.yaml"), "w") as fh:
        fh.write(text)
    weights = os.path.join(tmp, "policy", "weights")  # a DTensor run's torch DCP files
    os.makedirs(weights)
    for name in (".metadata", "__0_0.distcp"):
        with open(os.path.join(weights, name), "wb") as fh:
            fh.write(b"x")
    time.sleep(env_float("FAKE_SAVE_SECONDS", 0))
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)


def train() -> int:
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(OmegaConf.load(args.config), resolve=True)
    algo = "dpo" if "dpo" in cfg else "grpo"
    max_steps, max_epochs = cfg[algo]["max_num_steps"], cfg[algo]["max_num_epochs"]
    ckpt = cfg["checkpointing"]
    ckpt_dir = ckpt["checkpoint_dir"]
    per_epoch = int(env_float("FAKE_STEPS_PER_EPOCH", 1000))
    step_seconds = env_float("FAKE_STEP_SECONDS", 0.1)
    time.sleep(env_float("FAKE_SETUP_SECONDS", 0))
    state = latest(ckpt_dir) or {"epoch": 0, "step": 0, "total_steps": 0}
    epoch, step, total = state["epoch"], state["step"], state["total_steps"]
    if step == 0 and total > 0:
        epoch += 1  # the save was at an epoch's end: that epoch is done
    print("SETUP COMPLETE", flush=True)
    limit = seconds_of(ckpt.get("checkpoint_must_save_by"))
    start, times = time.time(), []
    fail_at = int(os.environ.get("FAKE_FAIL_AT_STEP") or 0)
    once = os.environ.get("FAKE_FAIL_ONCE")
    hold_at, hold_for = (
        int(os.environ.get("FAKE_WAIT_AT_STEP") or 0),
        os.environ.get("FAKE_WAIT_FOR"),
    )
    while epoch < max_epochs and total < max_steps:
        print(f"\n{'=' * 25} Epoch {epoch + 1}/{max_epochs} {'=' * 25}", flush=True)
        while step < per_epoch:
            print(f"\n{'=' * 25} Step {step + 1}/{min(per_epoch, max_steps)} {'=' * 25}")
            if total + 1 == fail_at and not (once and os.path.exists(once)):
                if once:
                    open(once, "w").close()
                for line in os.environ.get("FAKE_FAIL_LOG", "RuntimeError: boom").split("|"):
                    print(line, flush=True)
                return 1
            while total + 1 == hold_at and hold_for and not os.path.exists(hold_for):
                time.sleep(0.05)
            t0 = time.time()
            time.sleep(step_seconds)
            if os.environ.get("FAKE_LEDGER"):
                with open(os.environ["FAKE_LEDGER"], "a") as fh:
                    fh.write(f"{total + 1}\n")
            print(f"  • Loss: {1.0 / (total + 1):.4f}", flush=True)
            times.append(time.time() - t0)
            elapsed = time.time() - start
            timeout = elapsed + sum(times) / len(times) >= limit or elapsed >= limit
            last = total + 1 >= max_steps or (epoch + 1 == max_epochs and step + 1 == per_epoch)
            if last or (total + 1) % ckpt["save_period"] == 0 or timeout:
                info = {"epoch": epoch, "step": (step + 1) % per_epoch, "total_steps": total + 1}
                save(ckpt_dir, {**info, "consumed_samples": (total + 1) * 4})
            total, step = total + 1, step + 1
            if timeout:
                print("Timeout has been reached, stopping training early", flush=True)
                return 0
            if total >= max_steps:
                print("Max number of steps has been reached, stopping training early", flush=True)
                return 0
        epoch, step = epoch + 1, 0
    return 0


if os.environ.get("FAKE_STEP_SECONDS"):
    signal.signal(signal.SIGTERM, on_sigterm)
    sys.exit(train())
for i in range(int(os.environ.get("FAKE_TICKS", "0"))):
    print(f"tick {i}", flush=True)
    time.sleep(float(os.environ.get("FAKE_TICK_SECONDS", "1")))
if os.environ.get("FAKE_LOG_FILE"):
    with open(os.environ["FAKE_LOG_FILE"], encoding="utf-8") as fh:
        sys.stdout.write(fh.read())
print("driver done", flush=True)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
