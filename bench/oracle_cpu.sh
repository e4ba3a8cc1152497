#!/usr/bin/env bash
# Build the CPU oracle's environment: NeMo-RL of a given checkout in a CPU venv, plus a tiny
# model. Then `bench/oracle_cpu.py` judges `steps run --dry-run` by that real NeMo-RL.
#
# usage: bench/oracle_cpu.sh ROOT NEMO_RL [REF]
#   ROOT     scratch folder; gets ROOT/RL (when REF is given), ROOT/venv, ROOT/model
#   NEMO_RL  a NeMo-RL checkout (used as it is), or with REF a git source cloned to ROOT/RL
#   REF      a tag or commit to check out (e.g. v0.7.0)
# Environment: PYTHON (default python3.13, else a pyenv 3.13; NeMo-RL 0.7.0 asks for 3.13),
# STEPS_PYTHON (runs bench/tiny_qwen3.py; default the repo's .venv, else python3).
# Costs (v0.7.0, 2026-11): ~7 min, ~6.5 GB (nvidia wheels 2.7 GB, torch 1.2 GB). Network: PyPI.
#
# pip cannot install NeMo-RL's dependency list as written (uv can: it applies NeMo-RL's
# [tool.uv] override-dependencies, which pip lacks). Four changes, all outside what runs on CPU:
#   1. `--ignore-requires-python` on both installs (requires-python is pinned to a patch release,
#      e.g. >=3.13.13, newer than many 3.13 builds);
#   2. the TransferQueue git URL -> `transferqueue` from PyPI (the data plane only);
#   3. nvidia-cudnn-cu13 and nvidia-nvshmem-cu13 dropped (torch pins other versions; uv overrides
#      them; no CUDA on CPU);
#   4. `timm` -> `timm<=1.0.22` (NeMo-RL's own override).
# NeMo-RL itself is installed editable with --no-deps; vLLM, SGLang, Megatron and Automodel
# extras are not installed (GPU-only): their workers' first import is the GPU boundary.
# Then: .venv/bin/python bench/oracle_cpu.py --nemo-rl RL --python ROOT/venv/bin/python \
#         --model ROOT/model [-j 2]
set -euo pipefail
stop() { echo "oracle_cpu.sh: $1" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || stop "usage: bench/oracle_cpu.sh ROOT NEMO_RL [REF]"
repo=$(cd "$(dirname "$0")/.." && pwd)
root=$1 src=$2 ref=${3:-}
python=${PYTHON:-python3.13}
if ! command -v "$python" >/dev/null; then  # a pyenv build, if any
  for found in "$HOME"/.pyenv/versions/3.13*/bin/python3.13; do [ -x "$found" ] && python=$found; done
fi
command -v "$python" >/dev/null || stop "no $python: set PYTHON to a CPython 3.13 interpreter"
mkdir -p "$root" && root=$(cd "$root" && pwd)
if [ -n "$ref" ]; then
  [ -d "$root/RL" ] || git clone -q "$src" "$root/RL"
  git -C "$root/RL" checkout -q "$ref"
  rl=$root/RL
else
  rl=$(cd "$src" && pwd)
fi
[ -f "$rl/pyproject.toml" ] && [ -f "$rl/examples/run_grpo.py" ] || stop "$rl is not a NeMo-RL checkout"

[ -x "$root/venv/bin/python" ] || "$python" -m venv "$root/venv"
pip=("$root/venv/bin/python" -m pip install --ignore-requires-python)
"${pip[@]}" -q --no-deps -e "$rl"
# NeMo-RL's [project.dependencies] with changes 2-4 above.
"$root/venv/bin/python" - "$rl/pyproject.toml" "$root/requirements.txt" <<'PY'
import sys
import tomllib

with open(sys.argv[1], "rb") as fh:
    deps = tomllib.load(fh)["project"]["dependencies"]
kept = []
for dep in deps:
    name = dep.split(";")[0].split("@")[0].strip()
    if name.lower().startswith("transferqueue"):
        kept.append("transferqueue")
    elif name.startswith(("nvidia-cudnn-cu13", "nvidia-nvshmem-cu13")):
        continue
    elif name == "timm":
        kept.append("timm<=1.0.22")
    else:
        kept.append(dep)
with open(sys.argv[2], "w") as fh:
    fh.write("\n".join(kept) + "\n")
PY
"${pip[@]}" -r "$root/requirements.txt"

steps_python=${STEPS_PYTHON:-}
[ -n "$steps_python" ] || { [ -x "$repo/.venv/bin/python" ] && steps_python=$repo/.venv/bin/python || steps_python=python3; }
[ -f "$root/model/config.json" ] || "$steps_python" "$repo/bench/tiny_qwen3.py" "$root/model"
echo "oracle_cpu.sh: ready. Run:"
echo "  $steps_python $repo/bench/oracle_cpu.py --nemo-rl $rl --python $root/venv/bin/python --model $root/model"
