"""The upstream versions this catalog is written against: the one place the pin lives."""

from pathlib import Path

NEMO_RL_REPO = "NVIDIA-NeMo/RL"
NEMO_RL_COMMIT = "7ea279abfbeb698b092856d0dab61e7cf39bc909"  # 2026-08-22
NEMO_GYM_COMMIT = "07d6b0d07b22fcf530b4c211dae2ee23100428e4"  # NVIDIA-NeMo/Gym, 2026-08-22

# Where NeMo-RL lives inside its container, and where its Gym submodule sits in a checkout.
NEMO_RL_CONTAINER_PATH = "/opt/nemo-rl"
NEMO_RL_HOME_VAR = "NEMO_RL_HOME"
GYM_SUBDIR = "3rdparty/Gym-workspace/Gym"

# The NeMo-RL versions a run may target: these releases (oldest first) and the pin. Each has a
# schema derived from its source in NEMO_RL_SCHEMA_DIR/<label>/. 0.4.0 and 0.5.0 have another
# `data:` shape (one dataset: dataset_name / train_data_path / val_data_path, no data.train /
# data.validation / data.default): upstream's configs for them are checked, but our steps bind
# artifacts to the 0.6.0+ keys, so their configs get schema errors there (as NeMo-RL would).
# Tag commits let a git checkout at a release use the shipped schema as is.
NEMO_RL_RELEASES = {
    "0.4.0": "c751f811217db7df0d4c94abdeaada6626cfc150",
    "0.5.0": "6c7089300fded94abfa49bb9cbf9eb357d862461",
    "0.6.0": "5fb588932bf835506a8a5bac01de4f8c7ab0a065",
    "0.7.0": "81aa43dda4765b0429cf31dab44441e4e4383911",
}
NEMO_RL_OLDEST = "0.4.0"
# The oldest release our shipped NeMo-RL steps' configs run on (their data: section).
NEMO_RL_STEPS_OLDEST = "0.6.0"
_RELEASE_LIST = list(NEMO_RL_RELEASES)
NEMO_RL_STEP_RELEASES = tuple(_RELEASE_LIST[_RELEASE_LIST.index(NEMO_RL_STEPS_OLDEST) :])
# The pin is `main` after the r0.7.0 branch point (its package_info.py still says 0.6.0), so it
# orders after 0.7.0; a checkout descending from it counts as the pin or newer.
NEMO_RL_PIN_LABEL = "pin"
NEMO_RL_PIN_AFTER = "0.7.0"
NEMO_RL_SCHEMA_DIR = Path(__file__).resolve().parent / "schema" / "nemo_rl"

# Upstream scripts renamed between versions: (script today, version it appeared, name before).
NEMO_RL_SCRIPT_RENAMES = (("examples/run_grpo.py", "0.5.0", "examples/run_grpo_math.py"),)
