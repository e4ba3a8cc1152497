#!/usr/bin/env bash
# A GPU smoke you can repeat: real NeMo-RL DPO (DTensor policy, tiny_dtensor) on a tiny random
# Qwen3 made here offline, started by `python -m steps run`, its checkpoint checked by
# `python -m steps validate`. Prints one line:
#   gpu_smoke: steps=3 loss=0.6924 seconds=97.1 checkpoint=nemo_rl_dcp_checkpoint (torch DCP, step_3)
#
# usage: bench/gpu_smoke.sh NEMO_RL_DIR [--launcher CMD] [--work DIR] [--check-only]
#   NEMO_RL_DIR    a NeMo-RL checkout (0.6.0, 0.7.0 or the pin)
#   --launcher CMD what starts NeMo-RL's script (default python3): an interpreter with NeMo-RL's
#                  packages; NeMo-RL's DTensor workers are pointed at it too (no uv, no network).
#                  'uv run python' lets uv build the worker venvs instead (needs the network once).
#   --work DIR     where the model, outputs, run dir and log go (default: a new temp folder)
#   --check-only   skip the GPU check and the launch: make the model, run the preflight, stop
# Environment: STEPS_PYTHON (the Python that runs steps; default the repo's .venv, else python3).
# Exit: 0 trained and validated; 1 preflight findings, a failed run or a rejected checkpoint;
# 2 setup (no NVIDIA GPU, no checkout, bad arguments).
set -uo pipefail

stop() { echo "gpu_smoke: $1" >&2; exit "${2:-2}"; }

repo=$(cd "$(dirname "$0")/.." && pwd)
nemo_rl="" launcher="python3" work="" check_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --launcher) [ $# -ge 2 ] || stop "--launcher needs a command"; launcher=$2; shift 2 ;;
    --work) [ $# -ge 2 ] || stop "--work needs a folder"; work=$2; shift 2 ;;
    --check-only) check_only=1; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) stop "unknown option $1 (see --help)" ;;
    *) [ -z "$nemo_rl" ] || stop "one NEMO_RL_DIR only (got $nemo_rl and $1)"; nemo_rl=$1; shift ;;
  esac
done
[ -n "$nemo_rl" ] || stop "usage: bench/gpu_smoke.sh NEMO_RL_DIR [--launcher CMD] [--work DIR] [--check-only]"
[ -f "$nemo_rl/examples/run_dpo.py" ] || stop "$nemo_rl is not a NeMo-RL checkout (no examples/run_dpo.py)"
nemo_rl=$(cd "$nemo_rl" && pwd)
steps_python=${STEPS_PYTHON:-}
if [ -z "$steps_python" ]; then
  if [ -x "$repo/.venv/bin/python" ]; then steps_python="$repo/.venv/bin/python"; else steps_python=python3; fi
fi
(cd "$repo" && "$steps_python" -c "import steps" 2>/dev/null) \
  || stop "$steps_python cannot import steps: install it (pip install -e $repo) or set STEPS_PYTHON"

# 1. One GPU, before anything else costs time.
if [ "$check_only" = 0 ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  [ "${gpus:-0}" -ge 1 ] || stop "no NVIDIA GPU here (nvidia-smi -L lists none): nothing was launched; run this on a machine with one NVIDIA GPU, or pass --check-only to make the model and run the preflight"
fi

work=${work:-$(mktemp -d "${TMPDIR:-/tmp}/gpu-smoke.XXXXXX")}
mkdir -p "$work" && work=$(cd "$work" && pwd)
export STEPS_OUTPUT="$work/out" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export WANDB_MODE=disabled PYTHONUNBUFFERED=1
unset RAY_ADDRESS

# 2. The tiny model and tokenizer (standard library only: no network, no torch needed here).
"$steps_python" "$repo/bench/tiny_qwen3.py" "$work/model" || stop "could not write the tiny model" 1

# 3. Offline workers: NeMo-RL's DTensor workers ask for a uv-built venv; a venv folder whose
#    bin/python already exists is used as it is, so point it at the launcher's interpreter.
case "$launcher" in
  uv\ *|*/uv\ *) ;;
  *)
    interpreter=$(cd "$nemo_rl" && $launcher -c 'import sys; print(sys.executable)' 2>/dev/null) \
      || stop "launcher '$launcher' does not start a Python in $nemo_rl"
    for worker in nemo_rl.models.policy.workers.dtensor_policy_worker.DTensorPolicyWorker \
                  nemo_rl.models.policy.workers.dtensor_policy_worker_v2.DTensorPolicyWorkerV2; do
      mkdir -p "$work/venvs/$worker/bin"
      printf '#!/bin/sh\nexec %s "$@"\n' "$interpreter" > "$work/venvs/$worker/bin/python"
      chmod +x "$work/venvs/$worker/bin/python"
    done
    export NEMO_RL_VENV_DIR="$work/venvs" NEMO_RL_PY_EXECUTABLES_SYSTEM=1 ;;
esac

run=("$steps_python" -m steps run rl/nemo_rl/dpo -c tiny_dtensor --nemo-rl "$nemo_rl"
     --launcher "$launcher" --runs-dir "$work/runs"
     "policy.model_name=$work/model" "policy.tokenizer.name=$work/model")

# 4. Everything `steps` checks before a launch (schema, data, launcher, the interpreter's pins).
(cd "$repo" && "${run[@]}" --dry-run) || stop "the preflight found problems (above); nothing was launched" 1
if [ "$check_only" = 1 ]; then
  echo "gpu_smoke: check-only: model and preflight OK in $work; not launched (no --check-only to train)"
  exit 0
fi

# 5. Train, timed; NeMo-RL's output goes to the terminal and to run.log.
start=$(date +%s.%N)
(cd "$repo" && "${run[@]}") 2>&1 | tee "$work/run.log"
rc=${PIPESTATUS[0]}
seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ "$rc" = 0 ] || stop "the run failed with exit $rc after ${seconds}s (log: $work/run.log)" 1

# 6. The checkpoint, checked by its contract (the DCP type where this steps has it).
checkpoints="$STEPS_OUTPUT/dpo_dtensor/checkpoints"
type=nemo_rl_checkpoint
(cd "$repo" && "$steps_python" -m steps list --types) 2>/dev/null | grep -qw nemo_rl_dcp_checkpoint \
  && type=nemo_rl_dcp_checkpoint
(cd "$repo" && "$steps_python" -m steps validate "$type" "$checkpoints") \
  || stop "validate $type rejected $checkpoints (above)" 1

last=$(ls -d "$checkpoints"/step_* 2>/dev/null | sed 's/.*step_//' | sort -n | tail -1)
layout="unknown layout"
if ls "$checkpoints/step_$last/policy/weights/"*.distcp "$checkpoints/step_$last/policy/weights/model/"*.distcp >/dev/null 2>&1; then
  layout="torch DCP"
elif ls -d "$checkpoints/step_$last/policy/weights/"iter_* >/dev/null 2>&1; then
  layout="Megatron torch_dist"
fi
trained=$(grep -cE '^=+ Step [0-9]+/[0-9]+ =+$' "$work/run.log" || true)
loss=$(grep -E '^\s*• loss: ' "$work/run.log" | tail -1 | sed 's/.*: //')
echo "gpu_smoke: steps=${trained:-?} loss=${loss:-?} seconds=$seconds checkpoint=$type ($layout, step_$last)"
